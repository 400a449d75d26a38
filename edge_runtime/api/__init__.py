"""HTTP API pieces beside the daemon's own routes: answer streaming (``streaming``), the native
``/v1/ask`` NDJSON stream (``ask_stream``), the OpenAI-compatible chat-completions API
(``openai_request`` parses, ``openai_compat`` serves) and the CLI's streaming client
(``client``)."""
