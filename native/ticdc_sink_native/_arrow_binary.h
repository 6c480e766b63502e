/*
 * One Arrow binary or string array as the extension reads it: its buffers' addresses from Python (pyarrow's
 * Buffer.address), read in place. Shared by the producer (messages' keys and values) and the text join (parts).
 */

#ifndef TICDC_SINK_ARROW_BINARY_H
#define TICDC_SINK_ARROW_BINARY_H

#include <Python.h>

#include <stdint.h>
#include <string.h>

/* One Arrow binary array's buffers (binary/string: 32-bit offsets; large_binary/large_string: 64-bit). */
typedef struct {
    const uint8_t *validity; /* NULL: no nulls */
    const void *offsets;     /* NULL: no array at all (no keys) */
    const char *data;
    Py_ssize_t offset;       /* the array's offset into its buffers (a slice) */
    int large;
} binary_t;

static int parse_binary(PyObject *tuple, binary_t *array) {
    unsigned long long validity, offsets, data;
    memset(array, 0, sizeof(*array));
    if (tuple == Py_None)
        return 1;
    if (!PyArg_ParseTuple(tuple, "KKKnp", &validity, &offsets, &data, &array->offset, &array->large))
        return 0;
    if (!offsets || array->offset < 0) {
        PyErr_SetString(PyExc_ValueError, "an array needs its offsets buffer");
        return 0;
    }
    array->validity = (const uint8_t *)(uintptr_t)validity;
    array->offsets = (const void *)(uintptr_t)offsets;
    array->data = (const char *)(uintptr_t)data;
    return 1;
}

/* Where row i starts in the data buffer (row `length`: where the rows end). */
static inline int64_t binary_offset(const binary_t *array, Py_ssize_t i) {
    Py_ssize_t at = array->offset + i;
    return array->large ? ((const int64_t *)array->offsets)[at] : ((const int32_t *)array->offsets)[at];
}

/* Row i's bytes: NULL for a null (a message without key, a tombstone), else a pointer even for an empty value. */
static inline const char *binary_at(const binary_t *array, Py_ssize_t i, size_t *len) {
    static const char empty[1];
    Py_ssize_t at = array->offset + i;
    if (!array->offsets || (array->validity && !(array->validity[at >> 3] >> (at & 7) & 1))) {
        *len = 0;
        return NULL;
    }
    int64_t start = binary_offset(array, i);
    *len = (size_t)(binary_offset(array, i + 1) - start);
    return array->data ? array->data + start : empty;
}

#endif
