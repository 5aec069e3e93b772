"""How the executor's binding-status controller takes its keys: a burst of Work reports is one
pass, once the batch period has passed."""

from __future__ import annotations

import argparse

from flotilla.runtime.clock import FakeClock
from flotilla.store import ObjectStore
from services.executor.__main__ import add_arguments
from services.executor.binding_status import BATCH_PERIOD
from services.executor.controllers import ExecutorConfig, ExecutorControllers


def test_binding_status_gathers_a_bindings_reports_for_the_batch_period(store: ObjectStore) -> None:
    controllers = ExecutorControllers(store, FakeClock())
    assert controllers.binding_status.batch_period == BATCH_PERIOD == 0.5
    assert controllers.binding_controller.batch_period == 0.0  # Works are written at once
    configured = ExecutorControllers(store, FakeClock(), ExecutorConfig(status_batch_period=0.0))
    assert configured.binding_status.batch_period == 0.0


def test_the_batch_period_flag() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args([]).binding_status_batch_period == BATCH_PERIOD
    assert parser.parse_args(["--binding-status-batch-period", "2s"]).binding_status_batch_period == 2.0
