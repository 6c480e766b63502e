"""The delivery tests of ``tests/``, on real Kafka, where aborted transactions are isolated.

They are the same functions as in ``tests/test_exactly_once.py`` and
``tests/test_spark_sink.py``; here the ``broker`` fixture is a real Kafka
broker, so the checks that skip on the embedded broker run.  On the embedded
backend they would repeat the unit suite on the same broker: they skip.
"""

import pytest

import test_exactly_once as _exactly_once
import test_spark_sink as _spark_sink
from backend import chosen

pytestmark = pytest.mark.skipif(chosen().kind == "embedded",
                                reason="the unit suite runs these on the embedded broker already")

globals().update({name: value for module in (_exactly_once, _spark_sink)
                  for name, value in vars(module).items() if name.startswith("test_")})
protocol = _exactly_once.protocol  # the fixture its delivery tests run for every protocol with
transaction_calls = _exactly_once.transaction_calls  # the fixture that records what the writer asks of the broker
