"""The application, on top of every floor: the `flotilla` command (up, down, sim fault, demo,
bench), a control plane on one machine, the demo, the benchmarks, the timing profiles and the
simulator's client."""
