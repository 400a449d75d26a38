"""The cloud side of the edge ⇄ cloud link: the ``edge-cloud`` ZeroMQ gateway and its backends.

``gateway.Gateway`` serves the wire protocol (``edge_runtime.protocol``) on a ROUTER socket;
``backends`` hold what generates the answers: ``embedded`` (the device's ONNX engine),
``openai_http`` (an OpenAI-compatible server) and ``echo`` (no model; link tests).
``cli.main`` is the ``edge-cloud`` console script.
"""
