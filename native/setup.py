"""The C extensions of ticdc-sink-native (setuptools reads everything else from pyproject.toml)."""

from setuptools import Extension, setup

COMPILE = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"]
HEADERS = ["ticdc_sink_native/_arrow_binary.h"]

setup(ext_modules=[
    Extension(
        "ticdc_sink_native._batch_produce",
        sources=["ticdc_sink_native/_batch_produce.c"],
        depends=HEADERS,
        libraries=["dl", "pthread"],  # dlopen/dlsym and the mutexes, in libc itself on glibc 2.34 and later
        extra_compile_args=COMPILE,
    ),
    Extension("ticdc_sink_native._text_join", sources=["ticdc_sink_native/_text_join.c"], depends=HEADERS,
              extra_compile_args=COMPILE),
])
