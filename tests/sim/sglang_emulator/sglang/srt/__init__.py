"""The emulator's stand-in for ``sglang.srt``: only ``server_args``, SGLang's own server parser, is provided."""
