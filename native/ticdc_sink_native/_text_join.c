/*
 * The element-wise concatenation of string arrays and constants, in one pass that writes each row once.
 *
 * The JSON encoders assemble a message as tens of fragments per row (a column's quoted value, the constant text
 * between them), and Arrow's binary_join_element_wise makes a pass over its output per call, about 90 ns a row
 * for three parts. join() gives the same array, byte for byte and null for null (a row with a null part is
 * null), from the parts' buffers, with the GIL released. json_literals() makes a column's fragments in one pass
 * too: its values escaped as JSON and quoted, `null` for nulls, where Arrow takes a pass per character escaped,
 * one for the quotes and one for the nulls. plain_tidb_json() tells which JSON documents of a column TiDB would print
 * as they are, where Arrow takes a regular expression and a split of the objects to check their keys' order.
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

/* The data's buffer of `total` bytes, or NULL: with an exception set, or without one past 32-bit offsets. */
static PyObject *allocated_data(PyObject *allocate, int64_t total, Py_buffer *view) {
    return total <= INT32_MAX ? allocated(allocate, (Py_ssize_t)total, view) : NULL;
}

static void release(PyObject *buffer, Py_buffer *view) {
    PyBuffer_Release(view);
    Py_DECREF(buffer);
}

/* What a function returns when allocated_data() gave NULL: None past 2 GiB (for Arrow to take the work and give
 * its own result or error), else NULL with the exception. */
static PyObject *none_unless_error(void) {
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* A function's result, (offsets, data, validity, null_count), from buffers allocated() made: their views are
 * released, and the validity goes for None where no row is null (validity NULL: none was made). */
static PyObject *string_array(PyObject *offsets, Py_buffer *offsets_view, PyObject *data, Py_buffer *data_view,
                              PyObject *validity, Py_buffer *validity_view, Py_ssize_t null_count) {
    PyBuffer_Release(offsets_view);
    PyBuffer_Release(data_view);
    if (validity)
        PyBuffer_Release(validity_view);
    if (!null_count) {
        Py_XDECREF(validity);
        validity = Py_NewRef(Py_None);
    }
    return Py_BuildValue("(NNNn)", offsets, data, validity, null_count);
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
        if (offsets_buffer)
            release(offsets_buffer, &offsets_view);
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
    PyObject *data_buffer = allocated_data(allocate, total, &data_view);
    if (!data_buffer) {
        release(offsets_buffer, &offsets_view);
        release(validity_buffer, &validity_view);
        PyMem_Free(parts);
        return none_unless_error();
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
    return string_array(offsets_buffer, &offsets_view, data_buffer, &data_view, validity_buffer, &validity_view,
                        null_count);
}

/*
 * JSON escaping as TiCDC's Go writers do it, by style (ticdc_sink/codec/shared/json_text.py names them): every
 * style escapes the quote, the backslash and the control characters (\n \r \t short, the rest \u00XX); "html"
 * (easyjson, goccy/go-json) also < > & and U+2028/U+2029 as \u003c ... \u2029; "go-json" (encoding/json) does
 * the same and writes \b and \f short; "plain" (jsoniter, EscapeHTML off) nothing more.
 */
typedef struct {
    uint8_t len[256];    /* a byte's escape length, 0: the byte as it is */
    char text[256][6];
    int line_separators; /* U+2028 and U+2029 (E2 80 A8/A9) as \u2028 and \u2029 */
} escapes_t;

/* `\` `kind` and `value` in `digits` lowercase hex digits (\u00XX, \xNN ...); the end of what it wrote. */
static char *hex_escape(char *out, char kind, uint32_t value, int digits) {
    static const char hex[] = "0123456789abcdef";
    *out++ = '\\';
    *out++ = kind;
    for (int d = digits - 1; d >= 0; d--)
        *out++ = hex[value >> (4 * d) & 15];
    return out;
}

static void escape_as(escapes_t *escapes, unsigned char byte, const char *text) {
    escapes->len[byte] = (uint8_t)strlen(text);
    memcpy(escapes->text[byte], text, escapes->len[byte]);
}

static int escapes_of(const char *style, escapes_t *escapes) {
    int html = !strcmp(style, "html"), go_json = !strcmp(style, "go-json");
    if (!html && !go_json && strcmp(style, "plain"))
        return 0;
    memset(escapes, 0, sizeof(*escapes));
    for (int c = 0; c < 0x20; c++) {
        char text[7] = {0};
        hex_escape(text, 'u', (uint32_t)c, 4);
        escape_as(escapes, (unsigned char)c, text);
    }
    escape_as(escapes, '\\', "\\\\");
    escape_as(escapes, '"', "\\\"");
    escape_as(escapes, '\n', "\\n");
    escape_as(escapes, '\r', "\\r");
    escape_as(escapes, '\t', "\\t");
    if (go_json) {
        escape_as(escapes, '\b', "\\b");
        escape_as(escapes, '\f', "\\f");
    }
    if (html || go_json) {
        escape_as(escapes, '<', "\\u003c");
        escape_as(escapes, '>', "\\u003e");
        escape_as(escapes, '&', "\\u0026");
        escapes->line_separators = 1;
    }
    return 1;
}

/* U+2028 or U+2029 at bytes[i]. */
static inline int line_separator_at(const char *bytes, size_t len, size_t i) {
    return i + 2 < len && (unsigned char)bytes[i] == 0xE2 && (unsigned char)bytes[i + 1] == 0x80 &&
           ((unsigned char)bytes[i + 2] & 0xFE) == 0xA8;
}

/* The escaped length of one value (escapes NULL: its own length). */
static int64_t escaped_len(const escapes_t *escapes, const char *bytes, size_t len) {
    if (!escapes)
        return (int64_t)len;
    int64_t out = (int64_t)len;
    for (size_t i = 0; i < len; i++) {
        unsigned char byte = (unsigned char)bytes[i];
        if (escapes->len[byte])
            out += escapes->len[byte] - 1;
        else if (byte == 0xE2 && escapes->line_separators && line_separator_at(bytes, len, i))
            out += 3, i += 2; /* 3 bytes become 6 */
    }
    return out;
}

static char *escaped(const escapes_t *escapes, const char *bytes, size_t len, char *out) {
    if (!escapes) {
        memcpy(out, bytes, len);
        return out + len;
    }
    size_t run = 0; /* bytes[run:i] go as they are */
    for (size_t i = 0; i < len; i++) {
        unsigned char byte = (unsigned char)bytes[i];
        int separator = !escapes->len[byte] && byte == 0xE2 && escapes->line_separators &&
                        line_separator_at(bytes, len, i);
        if (!escapes->len[byte] && !separator)
            continue;
        memcpy(out, bytes + run, i - run);
        out += i - run;
        if (separator) {
            memcpy(out, (unsigned char)bytes[i + 2] == 0xA8 ? "\\u2028" : "\\u2029", 6);
            out += 6;
            i += 2;
        } else {
            memcpy(out, escapes->text[byte], escapes->len[byte]);
            out += escapes->len[byte];
        }
        run = i + 1;
    }
    memcpy(out, bytes + run, len - run);
    return out + (len - run);
}

/*
 * json_literals(array, length, style, allocate) -> (offsets, data, None, 0), or None past 2 GiB
 *
 * Each row of a string array as a JSON string: `null` for a null, else the value escaped in `style` (None: as it
 * is) between double quotes. The result has no nulls; its buffers come from allocate(size).
 */
static PyObject *py_json_literals(PyObject *self, PyObject *args) {
    PyObject *buffers, *allocate;
    Py_ssize_t length;
    const char *style;
    binary_t array;
    escapes_t escapes;
    if (!PyArg_ParseTuple(args, "O!nzO", &PyTuple_Type, &buffers, &length, &style, &allocate) ||
        !parse_binary(buffers, &array))
        return NULL;
    if (length < 0)
        return PyErr_Format(PyExc_ValueError, "length %zd", length);
    if (style && !escapes_of(style, &escapes))
        return PyErr_Format(PyExc_ValueError, "no JSON escaping style %s", style);
    const escapes_t *escaping = style ? &escapes : NULL;

    Py_buffer offsets_view, data_view;
    PyObject *offsets_buffer = allocated(allocate, (length + 1) * (Py_ssize_t)sizeof(int32_t), &offsets_view);
    if (!offsets_buffer)
        return NULL;
    int32_t *offsets = offsets_view.buf;
    int64_t total = 0;
    Py_BEGIN_ALLOW_THREADS
    offsets[0] = 0;
    for (Py_ssize_t i = 0; i < length && total <= INT32_MAX; i++) {
        size_t len;
        const char *bytes = binary_at(&array, i, &len);
        total += bytes ? 2 + escaped_len(escaping, bytes, len) : 4;
        offsets[i + 1] = (int32_t)total;
    }
    Py_END_ALLOW_THREADS
    PyObject *data_buffer = allocated_data(allocate, total, &data_view);
    if (!data_buffer) {
        release(offsets_buffer, &offsets_view);
        return none_unless_error();
    }
    char *out = data_view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < length; i++) {
        size_t len;
        const char *bytes = binary_at(&array, i, &len);
        if (!bytes) {
            memcpy(out, "null", 4);
            out += 4;
            continue;
        }
        *out++ = '"';
        out = escaped(escaping, bytes, len, out);
        *out++ = '"';
    }
    Py_END_ALLOW_THREADS
    return string_array(offsets_buffer, &offsets_view, data_buffer, &data_view, NULL, NULL, 0);
}

/* A valid UTF-8 sequence's width at bytes[0..n) and its rune, or 0 for an invalid byte (Go's utf8.DecodeRune: no
 * overlong forms, no surrogates, nothing past U+10FFFF). */
static int utf8_rune(const unsigned char *bytes, size_t n, uint32_t *rune) {
    unsigned char b = bytes[0];
    int width;
    unsigned char low = 0x80, high = 0xBF; /* the second byte's range */
    if (b < 0x80) {
        *rune = b;
        return 1;
    } else if (b >= 0xC2 && b <= 0xDF) {
        width = 2, *rune = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        width = 3, *rune = b & 0x0F;
        if (b == 0xE0)
            low = 0xA0;
        else if (b == 0xED)
            high = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        width = 4, *rune = b & 0x07;
        if (b == 0xF0)
            low = 0x90;
        else if (b == 0xF4)
            high = 0x8F;
    } else {
        return 0;
    }
    if ((size_t)width > n || bytes[1] < low || bytes[1] > high)
        return 0;
    for (int k = 1; k < width; k++) {
        if (k > 1 && (bytes[k] & 0xC0) != 0x80)
            return 0;
        *rune = *rune << 6 | (bytes[k] & 0x3F);
    }
    return width;
}

/* Go's strconv.Quote of one value, without its quotes: printable runes as they are (Go's unicode.IsPrint, which
 * Python's str.isprintable matches), `"` and `\` after a backslash, \a \b \f \n \r \t \v, other control bytes and
 * each byte of invalid UTF-8 as \xNN, other runes \uNNNN or \UNNNNNNNN. At most 4 bytes out per byte in. */
static char *go_quote_body(const unsigned char *bytes, size_t len, char *out) {
    static const char shorts[] = "\a\b\t\n\v\f\r", letters[] = "abtnvfr";
    size_t i = 0;
    while (i < len) {
        uint32_t rune;
        int width = utf8_rune(bytes + i, len - i, &rune);
        if (!width) {
            out = hex_escape(out, 'x', bytes[i], 2);
            i++;
            continue;
        }
        if (rune == '"' || rune == '\\') {
            *out++ = '\\';
            *out++ = (char)rune;
        } else if (rune >= 0x20 && rune < 0x7F) {
            *out++ = (char)rune;
        } else if (rune < 0x80) {
            const char *short_escape = rune ? strchr(shorts, (int)rune) : NULL;
            if (short_escape) {
                *out++ = '\\';
                *out++ = letters[short_escape - shorts];
            } else {
                out = hex_escape(out, 'x', rune, 2);
            }
        } else if (Py_UNICODE_ISPRINTABLE(rune)) {
            memcpy(out, bytes + i, (size_t)width);
            out += width;
        } else if (rune < 0x10000) {
            out = hex_escape(out, 'u', rune, 4);
        } else {
            out = hex_escape(out, 'U', rune, 8);
        }
        i += (size_t)width;
    }
    return out;
}

/*
 * go_quoted(array, length, allocate) -> (offsets, data, validity, null_count), or None past 2 GiB
 *
 * Each row of a binary array as Go's strconv.Quote writes it, without the quotes (Open Protocol's binary
 * columns); a null stays null. One pass into buffers sized for the most it can write (4 bytes per byte).
 */
static PyObject *py_go_quoted(PyObject *self, PyObject *args) {
    PyObject *buffers, *allocate;
    Py_ssize_t length;
    binary_t array;
    if (!PyArg_ParseTuple(args, "O!nO", &PyTuple_Type, &buffers, &length, &allocate) ||
        !parse_binary(buffers, &array))
        return NULL;
    if (length < 0)
        return PyErr_Format(PyExc_ValueError, "length %zd", length);
    int64_t span = binary_offset(&array, length) - binary_offset(&array, 0); /* the rows' bytes */
    Py_buffer offsets_view, validity_view, data_view;
    PyObject *offsets_buffer = allocated(allocate, (length + 1) * (Py_ssize_t)sizeof(int32_t), &offsets_view);
    PyObject *validity_buffer = offsets_buffer ? allocated(allocate, (length + 7) / 8, &validity_view) : NULL;
    PyObject *data_buffer = validity_buffer ? allocated_data(allocate, 4 * span, &data_view) : NULL;
    if (!data_buffer) {
        if (validity_buffer)
            release(validity_buffer, &validity_view);
        if (offsets_buffer)
            release(offsets_buffer, &offsets_view);
        return none_unless_error();
    }
    int32_t *offsets = offsets_view.buf;
    uint8_t *validity = validity_view.buf;
    char *data = data_view.buf, *out = data;
    Py_ssize_t null_count = 0;
    Py_BEGIN_ALLOW_THREADS
    memset(validity, 0, (size_t)((length + 7) / 8));
    offsets[0] = 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        size_t len;
        const char *bytes = binary_at(&array, i, &len);
        if (bytes) {
            validity[i >> 3] |= (uint8_t)(1u << (i & 7));
            out = go_quote_body((const unsigned char *)bytes, len, out);
        } else {
            null_count++;
        }
        offsets[i + 1] = (int32_t)(out - data);
    }
    Py_END_ALLOW_THREADS
    return string_array(offsets_buffer, &offsets_view, data_buffer, &data_view, validity_buffer, &validity_view,
                        null_count);
}

/* The JSON documents of a few plain shapes that are in TiDB's text already (changes/tidb_json.py keeps them
 * without a parse and a print): a scalar, an array of scalars, or an object whose members are scalars or arrays of
 * scalars, with keys in strictly ascending byte order; strings of valid UTF-8 without escapes, control characters,
 * U+2028 or U+2029 (which TiDB escapes); integers of at most 18 digits, no "-0" and no floats (Go prints those);
 * TiDB's ", " and ": " between tokens and nothing else. Each scanner returns where its token ends, or NULL (also
 * for `at` NULL, so that a chain of them stops at the first that fails). */
static const unsigned char *plain_string(const unsigned char *at, const unsigned char *end) {
    if (!at || at >= end || *at != '"')
        return NULL;
    for (at++; at < end;) {
        unsigned char c = *at;
        if (c == '"')
            return at + 1;
        if (c == '\\' || c < 0x20)
            return NULL;
        if (c < 0x80) {
            at++;
            continue;
        }
        uint32_t rune;
        int width = utf8_rune(at, (size_t)(end - at), &rune);
        if (!width || rune == 0x2028 || rune == 0x2029)
            return NULL;
        at += width;
    }
    return NULL;
}

static const unsigned char *plain_scalar(const unsigned char *at, const unsigned char *end) {
    static const char *const words[] = {"true", "false", "null"};
    if (!at || at >= end)
        return NULL;
    if (*at == '"')
        return plain_string(at, end);
    if (*at == '0')
        return at + 1;
    if (*at == '-' || (*at >= '1' && *at <= '9')) {
        at += *at == '-';
        if (at >= end || *at < '1' || *at > '9')
            return NULL;
        const unsigned char *digits = at;
        while (at < end && *at >= '0' && *at <= '9' && at - digits < 18)
            at++;
        return at;
    }
    for (size_t w = 0; w < sizeof(words) / sizeof(*words); w++) {
        size_t len = strlen(words[w]);
        if ((size_t)(end - at) >= len && !memcmp(at, words[w], len))
            return at + len;
    }
    return NULL;
}

/* `at` past the separator `sep` (", " or ": "), or NULL. */
static const unsigned char *past(const unsigned char *at, const unsigned char *end, const char *sep) {
    return at && end - at >= 2 && at[0] == sep[0] && at[1] == sep[1] ? at + 2 : NULL;
}

static const unsigned char *plain_member_value(const unsigned char *at, const unsigned char *end) {
    if (!at || at >= end || *at != '[')
        return plain_scalar(at, end);
    if (++at < end && *at == ']')
        return at + 1;
    for (at = plain_scalar(at, end); at && at < end && *at != ']'; at = plain_scalar(past(at, end, ", "), end))
        ;
    return at && at < end ? at + 1 : NULL;
}

static int plain_document(const unsigned char *at, const unsigned char *end) {
    if (at >= end || *at != '{')
        return plain_member_value(at, end) == end;
    if (++at < end && *at == '}')
        return at + 1 == end;
    const unsigned char *key = NULL;
    size_t key_len = 0;
    while (at) {
        const unsigned char *key_end = plain_string(at, end);
        if (!key_end)
            return 0;
        size_t len = (size_t)(key_end - at) - 2; /* its bytes between the quotes */
        if (key) { /* strictly after the key before it */
            int order = memcmp(key, at + 1, len < key_len ? len : key_len);
            if (order > 0 || (order == 0 && len <= key_len))
                return 0;
        }
        key = at + 1, key_len = len;
        at = plain_member_value(past(key_end, end, ": "), end);
        if (at && at < end && *at == '}')
            return at + 1 == end;
        at = past(at, end, ", ");
    }
    return 0;
}

/*
 * plain_tidb_json(array, length) -> bytes
 *
 * One byte per row of a string array: 1 where the row is a JSON document of a plain shape in TiDB's text already
 * (above), 0 where it is not or is null. What Arrow's regular expressions prove in tidb_json.py, in one pass.
 */
static PyObject *py_plain_tidb_json(PyObject *self, PyObject *args) {
    PyObject *buffers;
    Py_ssize_t length;
    binary_t array;
    if (!PyArg_ParseTuple(args, "O!n", &PyTuple_Type, &buffers, &length) || !parse_binary(buffers, &array))
        return NULL;
    if (length < 0)
        return PyErr_Format(PyExc_ValueError, "length %zd", length);
    PyObject *result = PyBytes_FromStringAndSize(NULL, length);
    if (!result)
        return NULL;
    char *plain = PyBytes_AS_STRING(result);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < length; i++) {
        size_t len;
        const unsigned char *bytes = (const unsigned char *)binary_at(&array, i, &len);
        plain[i] = (char)(bytes && plain_document(bytes, bytes + len));
    }
    Py_END_ALLOW_THREADS
    return result;
}

static PyMethodDef methods[] = {
    {"join", py_join, METH_VARARGS,
     "join(parts, length, allocate) -> (offsets, data, validity, null_count) of the rows' concatenation, or None "
     "past 2 GiB"},
    {"json_literals", py_json_literals, METH_VARARGS,
     "json_literals(array, length, style, allocate) -> (offsets, data, None, 0) of each row as a JSON string "
     "(null for a null), or None past 2 GiB"},
    {"go_quoted", py_go_quoted, METH_VARARGS,
     "go_quoted(array, length, allocate) -> (offsets, data, validity, null_count) of each binary row as Go's "
     "strconv.Quote writes it, without the quotes, or None past 2 GiB"},
    {"plain_tidb_json", py_plain_tidb_json, METH_VARARGS,
     "plain_tidb_json(array, length) -> bytes, 1 per row that is a JSON document of a plain shape in TiDB's text "
     "already, else 0"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_text_join",
                                    "ticdc-sink's native text join (see native/README.md)", -1, methods};

PyMODINIT_FUNC PyInit__text_join(void) { return PyModule_Create(&module); }
