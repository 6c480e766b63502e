/*
 * The element-wise concatenation of string arrays and constants, in one pass that writes each row once.
 *
 * The JSON encoders assemble a message as tens of fragments per row (a column's quoted value, the constant text
 * between them), and Arrow's binary_join_element_wise makes a pass over its output per call, about 90 ns a row
 * for three parts. join() gives the same array, byte for byte and null for null (a row with a null part is
 * null), from the parts' buffers, with the GIL released.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "_arrow_binary.h"

typedef struct {
    binary_t array;     /* offsets NULL: a constant */
    const char *text;   /* the constant's bytes */
    Py_ssize_t text_len;
} part_t;

/* A writable buffer of `size` bytes from `allocate` (pyarrow.allocate_buffer: Arrow's pool, whose memory is reused
 * from batch to batch, where fresh memory costs a page fault per 4 KiB on its first write). */
static PyObject *allocated(PyObject *allocate, Py_ssize_t size, Py_buffer *view) {
    PyObject *buffer = PyObject_CallFunction(allocate, "n", size);
    if (buffer && PyObject_GetBuffer(buffer, view, PyBUF_WRITABLE) < 0)
        Py_CLEAR(buffer);
    return buffer;
}

/*
 * join(parts, length, allocate) -> (offsets, data, validity, null_count), or None where the result exceeds 32-bit
 * offsets
 *
 * parts: bytes (a constant) or the buffers (validity, offsets, data, offset, large) of a string array of `length`
 * rows. The result is a string array's buffers, each made by allocate(size): int32 offsets, the data, and a
 * validity bitmap (None without nulls).
 */
static PyObject *py_join(PyObject *self, PyObject *args) {
    PyObject *sequence, *allocate;
    Py_ssize_t length;
    if (!PyArg_ParseTuple(args, "O!nO", &PyTuple_Type, &sequence, &length, &allocate))
        return NULL;
    if (length < 0)
        return PyErr_Format(PyExc_ValueError, "length %zd", length);
    Py_ssize_t count = PyTuple_GET_SIZE(sequence);
    part_t *parts = PyMem_Calloc((size_t)(count ? count : 1), sizeof(*parts));
    if (!parts)
        return PyErr_NoMemory();
    Py_ssize_t constant_len = 0; /* every row has all the constants; the parts tuple holds their bytes */
    for (Py_ssize_t p = 0; p < count; p++) {
        PyObject *item = PyTuple_GET_ITEM(sequence, p);
        if (PyBytes_Check(item)) {
            parts[p].text = PyBytes_AS_STRING(item);
            parts[p].text_len = PyBytes_GET_SIZE(item);
            constant_len += parts[p].text_len;
        } else if (!PyTuple_Check(item) || !parse_binary(item, &parts[p].array)) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "part %zd is neither bytes nor an array's buffers", p);
            PyMem_Free(parts);
            return NULL;
        }
    }

    Py_buffer offsets_view, validity_view, data_view;
    PyObject *offsets_buffer = allocated(allocate, (length + 1) * (Py_ssize_t)sizeof(int32_t), &offsets_view);
    PyObject *validity_buffer = offsets_buffer ? allocated(allocate, (length + 7) / 8, &validity_view) : NULL;
    if (!validity_buffer) {
        if (offsets_buffer) {
            PyBuffer_Release(&offsets_view);
            Py_DECREF(offsets_buffer);
        }
        PyMem_Free(parts);
        return NULL;
    }
    int32_t *offsets = offsets_view.buf;
    uint8_t *validity = validity_view.buf;
    Py_ssize_t null_count = 0;
    int64_t total = 0;

    /* First pass: each row's length, and whether a part of it is null. */
    Py_BEGIN_ALLOW_THREADS
    memset(validity, 0, (size_t)((length + 7) / 8));
    offsets[0] = 0;
    for (Py_ssize_t i = 0; i < length && total <= INT32_MAX; i++) {
        int64_t row = constant_len;
        int valid = 1;
        for (Py_ssize_t p = 0; p < count && valid; p++) {
            if (!parts[p].array.offsets)
                continue;
            size_t len;
            if (binary_at(&parts[p].array, i, &len))
                row += (int64_t)len;
            else
                valid = 0;
        }
        if (valid) {
            validity[i >> 3] |= (uint8_t)(1u << (i & 7));
            total += row;
        } else {
            null_count++;
        }
        offsets[i + 1] = (int32_t)total;
    }
    Py_END_ALLOW_THREADS
    PyObject *data_buffer = NULL;
    if (total <= INT32_MAX)
        data_buffer = allocated(allocate, (Py_ssize_t)total, &data_view);
    if (!data_buffer) {
        PyBuffer_Release(&offsets_view);
        PyBuffer_Release(&validity_view);
        Py_DECREF(offsets_buffer);
        Py_DECREF(validity_buffer);
        PyMem_Free(parts);
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }

    /* Second pass: each valid row's parts, in order. */
    char *data = data_view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < length; i++) {
        if (!(validity[i >> 3] >> (i & 7) & 1))
            continue;
        char *out = data + offsets[i];
        for (Py_ssize_t p = 0; p < count; p++) {
            if (!parts[p].array.offsets) {
                memcpy(out, parts[p].text, (size_t)parts[p].text_len);
                out += parts[p].text_len;
            } else {
                size_t len;
                const char *bytes = binary_at(&parts[p].array, i, &len);
                memcpy(out, bytes, len);
                out += len;
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(parts);
    PyBuffer_Release(&offsets_view);
    PyBuffer_Release(&validity_view);
    PyBuffer_Release(&data_view);
    if (!null_count) {
        Py_DECREF(validity_buffer);
        validity_buffer = Py_NewRef(Py_None);
    }
    return Py_BuildValue("(NNNn)", offsets_buffer, data_buffer, validity_buffer, null_count);
}

static PyMethodDef methods[] = {
    {"join", py_join, METH_VARARGS,
     "join(parts, length, allocate) -> (offsets, data, validity, null_count) of the rows' concatenation, or None "
     "past 2 GiB"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_text_join",
                                    "ticdc-sink's native text join (see native/README.md)", -1, methods};

PyMODINIT_FUNC PyInit__text_join(void) { return PyModule_Create(&module); }
