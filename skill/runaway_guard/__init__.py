"""runaway-guard: the runtime package the hook and the status command import."""
