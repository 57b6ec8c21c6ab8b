"""Request handlers, one module per API family. Each exposes ``handle_<api>(ctx, body)``."""
