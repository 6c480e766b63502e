"""Secrets never shown: every secret-bearing option through every error path, reprs and logs.

Errors, reprs and log lines reach Spark's UI, driver logs and tracebacks, so a
password, token or credential must appear there only as ``***`` while the
parsed configuration keeps the real value for librdkafka.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from urllib.parse import quote

import pytest
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.errors import ConfigError
from ticdc_sink.redact import MASK, is_secret_name, mask, mask_url
from ticdc_sink.sink.task import WritePlan

BASE = {"kafka.bootstrap.servers": "broker:9092", "protocol": "canal-json", "topic": "orders"}
URI = "kafka://broker:9092/orders?protocol=canal-json"
ELSEWHERE = {"sink-uri": "kafka://elsewhere:9092/orders"}  # disagrees with BASE on the brokers
SCHEMA = StructType([StructField("_op", StringType()), StructField("_commit_ts", LongType()),
                     StructField("_schema", StringType()), StructField("_table", StringType()),
                     StructField("id", IntegerType())])


@dataclass(frozen=True)
class Secret:
    """A valid configuration holding ``secret``, and what makes the same setting given twice disagree.

    ``twice`` sets the secret's setting again with another value (which contains
    the secret too); a setting that the sink-uri cannot carry conflicts on the
    brokers instead, with its secret still in the options.
    """

    secret: str
    options: dict[str, str]
    twice: dict[str, str]


SECRETS = {
    "sink-uri sasl-password": Secret(
        "Uri-Sasl-Pw-4711",
        {"sink-uri": f"{URI}&sasl-user=u&sasl-password=Uri-Sasl-Pw-4711&sasl-mechanism=PLAIN&kafka-version=2.4.0"},
        {"kafka.sasl.password": "x-Uri-Sasl-Pw-4711"},
    ),
    "sink-uri userinfo": Secret(
        "Uri-User-Pw-4712",
        {"sink-uri": "kafka://alice:Uri-User-Pw-4712@broker:9092/orders?protocol=canal-json"},
        {"kafka.bootstrap.servers": "elsewhere:9092"},
    ),
    "kafka.sasl.password": Secret(
        "Sasl-Pw-4713",
        {**BASE, "kafka.sasl.password": "Sasl-Pw-4713"},
        {"sink-uri": "kafka://broker:9092/orders?sasl-password=x-Sasl-Pw-4713"},
    ),
    "kafka.ssl.key.password": Secret("Key-Pw-4714", {**BASE, "kafka.ssl.key.password": "Key-Pw-4714"}, ELSEWHERE),
    "kafka.sasl.oauthbearer.client.secret": Secret(
        "Client-Secret-4715", {**BASE, "kafka.sasl.oauthbearer.client.secret": "Client-Secret-4715"}, ELSEWHERE
    ),
    "kafka.*token*": Secret("Api-Token-4716", {**BASE, "kafka.api.token": "Api-Token-4716"}, ELSEWHERE),
    "schema-registry": Secret(
        "Registry-Pw-4717",
        {**BASE, "schema-registry": "https://alice:Registry-Pw-4717@sr:8081"},
        {"sink-uri": "kafka://broker:9092/orders?schema-registry=https://alice:x-Registry-Pw-4717@sr:8081"},
    ),
    "schema-registry in sink-uri, percent-encoded": Secret(
        "Registry-Pw-4718",
        {"sink-uri": f"{URI}&schema-registry=" + quote("https://alice:Registry-Pw-4718@sr:8081", safe="")},
        {"schema-registry": "https://alice:x-Registry-Pw-4718@sr:8081"},
    ),
}


def _with_bad_uri_parameter(case: Secret) -> dict[str, str]:
    if "sink-uri" in case.options:
        return {**case.options, "sink-uri": case.options["sink-uri"] + "&no-such-parameter=1"}
    return {**case.options, "sink-uri": "kafka://broker:9092/orders?no-such-parameter=1"}


# Error path -> (the failing options, text that shows the error took that path).
PATHS = {
    "unknown sink-uri parameter": (_with_bad_uri_parameter, "unknown parameter 'no-such-parameter'"),
    "given twice": (lambda case: {**case.options, **case.twice}, "sink-uri already sets it to"),
    "bad value of another option": (lambda case: {**case.options, "max-batch-size": "zero"},
                                    "option 'max-batch-size'"),
    "unknown option": (lambda case: {**case.options, "no-such-option": "1"}, "unknown option"),
}


def assert_hidden(secret: str, *shown) -> None:
    for text in shown:
        assert secret not in text


def assert_error_hides(secret: str, err: ConfigError) -> None:
    assert_hidden(secret, str(err), repr(err), repr(vars(err)))


@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
@pytest.mark.parametrize("case", SECRETS.values(), ids=SECRETS.keys())
def test_errors_never_show_the_secret(case, path):
    make_options, taken = path
    with pytest.raises(ConfigError) as info:
        parse_options(make_options(case))
    assert taken in str(info.value)
    assert_error_hides(case.secret, info.value)


# A sink-uri parameter the sink ignores, and the line it logs about it (so every case below logs).
IGNORED = "dial-timeout=10s"
IGNORED_LINE = "sink-uri parameter dial-timeout=10s is not needed by librdkafka and is ignored"


def _with_ignored_uri_parameter(case: Secret) -> dict[str, str]:
    """The case's options with IGNORED in its sink-uri, or in one that agrees with BASE where it has none."""
    uri = case.options.get("sink-uri", "kafka://broker:9092/orders")
    return {**case.options, "sink-uri": uri + ("&" if "?" in uri else "?") + IGNORED}


@pytest.mark.parametrize("case", SECRETS.values(), ids=SECRETS.keys())
def test_config_plan_and_logs_never_show_the_secret(case, caplog):
    caplog.set_level(logging.DEBUG, logger="ticdc_sink")
    config = parse_options(_with_ignored_uri_parameter(case))
    plan = WritePlan.for_schema(config, SCHEMA)
    assert IGNORED_LINE in caplog.messages
    assert_hidden(case.secret, repr(config), str(config), repr(plan), str(plan), caplog.text)


def test_every_url_of_a_registry_list_is_masked():
    config = parse_options({**BASE, "protocol": "avro", "topic": "{schema}_{table}",
                            "schema-registry": "http://u:Pass-1@a:8081,https://v:Pass-2@b:8081"})
    assert "schema_registry='http://u:***@a:8081,https://v:***@b:8081'" in repr(config)
    assert_hidden("Pass-", repr(config))


def test_the_config_keeps_the_real_values():
    config = parse_options({
        "sink-uri": "kafka://broker:9092/t_{schema}_{table}?protocol=avro&sasl-password=Real-1",
        "kafka.ssl.key.password": "Real-2", "kafka.sasl.oauthbearer.client.secret": "Real-3",
        "schema-registry": "https://a:Real-4@sr",
    })
    assert {k: config.kafka[k] for k in ("sasl.password", "ssl.key.password", "sasl.oauthbearer.client.secret")} \
        == {"sasl.password": "Real-1", "ssl.key.password": "Real-2", "sasl.oauthbearer.client.secret": "Real-3"}
    assert config.protocol_options.schema_registry == "https://a:Real-4@sr"
    assert "('sasl.password', '***')" in repr(config) and "schema_registry='https://a:***@sr'" in repr(config)


@pytest.mark.parametrize("name", ["sasl-password", "kafka_sasl_password", "ssl.key.password", "oauth-client-secret",
                                  "api-token", "schema-registry-basic-auth-user-info"])
def test_an_unknown_option_named_like_a_secret_is_masked(name):
    with pytest.raises(ConfigError) as info:
        parse_options({**BASE, name: "Unknown-Secret-4719"})
    assert "unknown option" in str(info.value)
    assert_error_hides("Unknown-Secret-4719", info.value)


def test_a_sink_uri_error_keeps_the_rest_of_the_uri_readable():
    with pytest.raises(ConfigError) as info:
        parse_options({"sink-uri": "kafka://alice:pw1@h1:9092,h2:9092/t?protocol=canal-json&sasl-user=bob"
                                   "&sasl-password=pw2&bad=1"})
    assert info.value.value == ("kafka://alice:***@h1:9092,h2:9092/t?protocol=canal-json&sasl-user=bob"
                                "&sasl-password=***&bad=1")


# ---------------------------------------------------------------------------
# The rules of ticdc_sink.redact


@pytest.mark.parametrize("name", [
    "sasl.password", "kafka.sasl.password", "sasl-password", "SASL_PASSWORD", "ssl.key.password",
    "ssl.keystore.password", "ssl.key.pem", "sasl.oauthbearer.client.secret", "sasl.oauthbearer.config",
    "kafka.api.token", "schema-registry.basic.auth.user.info", "basic-auth-user-info", "aws.credentials",
    "s3.access.key", "sasl.jaas.config", "db.passwd",
])
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", [
    "sasl.username", "sasl-user", "sasl.mechanism", "ssl.key.location", "ssl.certificate.pem", "ssl.ca.pem",
    "bootstrap.servers", "schema-registry", "sink-uri", "topic", "primary-key", "unique-keys", "partition-index",
])
def test_names_that_hold_no_secret(name):
    assert not is_secret_name(name)


@pytest.mark.parametrize("url,shown", [
    ("https://alice:pw@sr:8081/path?x=1", f"https://alice:{MASK}@sr:8081/path?x=1"),
    ("https://Bearer-xyz@sr", f"https://{MASK}@sr"),  # a user info without ':' may be a token
    ("https://sr:8081", "https://sr:8081"),
    ("alice:pw@sr:8081", f"alice:{MASK}@sr:8081"),
    ("h:9092/t?sasl-user=me@corp&ssl-key-password=pw&token=t", f"h:9092/t?sasl-user=me@corp&ssl-key-password={MASK}"
                                                               f"&token={MASK}"),
    ("kafka://h/t?schema-registry=https://a:pw@sr", f"kafka://h/t?schema-registry=https://a:{MASK}@sr"),
])
def test_mask_url(url, shown):
    assert mask_url(url) == shown


@pytest.mark.parametrize("name,value,shown", [
    ("kafka.sasl.password", "pw", MASK),
    ("schema-registry", "a:pw@sr", f"a:{MASK}@sr"),  # a URL by its name, even without a scheme
    ("kafka.sasl.oauthbearer.token.endpoint.url", "https://idp/token", MASK),
    ("kafka.some.endpoint", "https://a:pw@idp", f"https://a:{MASK}@idp"),  # a URL by its scheme
    ("sasl-user", "me@corp", "me@corp"),
    ("table-id", 7, 7),
    ("kafka.sasl.password", None, None),
])
def test_mask(name, value, shown):
    assert mask(name, value) == shown
