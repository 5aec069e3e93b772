#!/usr/bin/env bash
# The demo for now: bring the control plane up, show it, take it down.
set -euo pipefail
data_dir="${FLOTILLA_DEMO_DIR:-./.flotilla}"
trap 'flotilla down --data-dir "$data_dir" >/dev/null 2>&1 || true' EXIT
export_line=$(flotilla up --detach --data-dir "$data_dir")
echo "$export_line"
eval "$export_line"
flotillactl status
flotilla down --data-dir "$data_dir"
trap - EXIT
