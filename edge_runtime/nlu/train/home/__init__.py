"""Building and evaluating the home understanding (build time only; serving reads the
built model through ``edge_runtime.nlu.home``)."""
