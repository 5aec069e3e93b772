"""The current-context machinery lives in the library (flotilla.security.context), where services use
it too; re-exported here for the CLI's existing imports."""

from flotilla.security.context import (
    CONTEXT_FILE,
    ENV_CONFIG,
    ENV_ENDPOINTS,
    NO_PLANE,
    Context,
    ContextError,
    clear_current_if,
    current_context,
    current_data_dir,
    pointer_path,
    resolve_endpoints,
    set_current,
)

__all__ = [
    "CONTEXT_FILE", "ENV_CONFIG", "ENV_ENDPOINTS", "NO_PLANE", "Context", "ContextError", "clear_current_if",
    "current_context", "current_data_dir", "pointer_path", "resolve_endpoints", "set_current",
]
