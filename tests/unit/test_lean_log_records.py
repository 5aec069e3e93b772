"""Services log without looking up what their log format never names (flotilla.runtime.service)."""

from __future__ import annotations

import logging

import pytest

from flotilla.runtime.service import lean_log_records


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_record_carries_no_thread_process_or_source_line(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("logThreads", "logProcesses", "logMultiprocessing", "_srcfile"):
        monkeypatch.setattr(logging, name, getattr(logging, name))  # put back after the test
    lean_log_records()
    logger, kept = logging.getLogger("flotilla.test-lean"), Kept()
    logger.addHandler(kept)
    try:
        logger.warning("event=%s", "x")
    finally:
        logger.removeHandler(kept)
    [record] = kept.records
    assert (record.thread, record.process, record.funcName) == (None, None, "(unknown function)")
    formatted = logging.Formatter("%(levelname)s %(name)s %(message)s").format(record)
    assert formatted == "WARNING flotilla.test-lean event=x"
