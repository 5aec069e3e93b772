"""Messages generated from protos/flotilla/v1 by scripts/gen_protos.py. Do not edit."""
