"""Cloud-link harness: gateway processes on loopback (``fleet``), the failure drills
(``drills``, ``scenarios``), shared by ``benchmarks.cloud_bench`` and the tests."""
