"""Build time only: training, calibration, evaluation and data for the intent models.

``edge-runtime nlu train | eval | calibrate | hass-prepare | hass-export`` (``cli``);
``train_encoder`` (torch + transformers, the ``train`` extra), ``calibrate`` (out-of-scope
thresholds), ``evaluation`` (the one evaluation module), ``metrics``, ``datasets``,
``augment`` (recognizer-style noise), ``hass`` / ``hass_model`` (Home Assistant templates
sampled into rows, slot tables learned, model files written).

Serving code (the daemon, ``nlu.understander`` and the rest of ``edge_runtime``) never
imports this package: tests/unit/test_import_graph.py checks it.
"""
