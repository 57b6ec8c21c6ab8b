"""Pure decisions over observed state; no I/O."""
