from sglang import __version__  # noqa: F401  (where real SGLang keeps its version)
