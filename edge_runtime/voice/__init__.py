"""The voice loop: audio in -> VAD/endpointing -> ASR -> pipeline -> sentence chunks -> TTS
-> audio out, with barge-in. ``api.add_voice_routes`` wires it into the daemon,
``cli.ask_wav`` / ``cli.run_chat`` into the CLI."""
