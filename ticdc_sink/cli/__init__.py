"""The command line: demo, tail and broker (``python -m ticdc_sink``, ``ticdc-sink``)."""

from .main import main

__all__ = ["main"]
