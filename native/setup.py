"""The C extension of ticdc-sink-native (setuptools reads everything else from pyproject.toml)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "ticdc_sink_native._batch_produce",
    sources=["ticdc_sink_native/_batch_produce.c"],
    libraries=["dl", "pthread"],  # dlopen/dlsym and the mutexes, in libc itself on glibc 2.34 and later
    extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
)])
