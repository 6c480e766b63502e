/*
 * ticdc-sink's native producer path: a batch of messages (Arrow buffers) handed to librdkafka in one call from
 * Python, and their deliveries counted here, in C, with no Python call per message.
 *
 * Two roles in one shared object:
 *
 * - A Python extension: bind() finds the librdkafka that confluent-kafka's cimpl module uses (through cimpl's own
 *   dependencies, so it is the same loaded instance), produce() enqueues messages with rd_kafka_produce(), take()
 *   hands over what was delivered since the last take().
 * - A librdkafka plugin (conf_init, loaded through the producer setting plugin.library.paths naming this very
 *   file, so librdkafka's dlopen() returns the object Python loaded, with the same globals): each producer gets a
 *   state whose on_acknowledgement interceptor counts the deliveries of the messages produce() enqueued, which are
 *   the producer's only messages with a NULL _private (confluent-kafka gives each of its own a state, and its
 *   delivery callback skips messages without one).
 *
 * Python finds a producer's state by rd_kafka_opaque(rk): confluent-kafka sets it to its Handle, the Python
 * Producer object, whose address is id(producer).
 *
 * librdkafka is not linked: its public ABI (types, constants, prototypes) is declared below and its functions are
 * looked up at run time.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_arrow_binary.h"

/* -- librdkafka's public ABI (rdkafka.h), as this file uses it */

typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_conf_s rd_kafka_conf_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_topic_conf_s rd_kafka_topic_conf_t;
typedef int rd_kafka_resp_err_t; /* an enum */

typedef struct {
    rd_kafka_resp_err_t err;
    rd_kafka_topic_t *rkt;
    int32_t partition;
    void *payload;
    size_t len;
    void *key;
    size_t key_len;
    int64_t offset;
    void *_private;
} rd_kafka_message_t;

#define RD_KAFKA_MSG_F_COPY 0x2
#define RD_KAFKA_RESP_ERR__FAIL (-196)
#define RD_KAFKA_RESP_ERR__INVALID_ARG (-186)

typedef rd_kafka_resp_err_t(on_new_f)(rd_kafka_t *rk, const rd_kafka_conf_t *conf, void *ic_opaque, char *errstr,
                                      size_t errstr_size);
typedef rd_kafka_resp_err_t(on_conf_destroy_f)(void *ic_opaque);
typedef rd_kafka_resp_err_t(on_destroy_f)(rd_kafka_t *rk, void *ic_opaque);
typedef rd_kafka_resp_err_t(on_acknowledgement_f)(rd_kafka_t *rk, rd_kafka_message_t *rkmessage, void *ic_opaque);

static struct librdkafka {
    void *(*opaque)(const rd_kafka_t *rk);
    rd_kafka_topic_t *(*topic_new)(rd_kafka_t *rk, const char *topic, rd_kafka_topic_conf_t *conf);
    void (*topic_destroy)(rd_kafka_topic_t *rkt);
    const char *(*topic_name)(const rd_kafka_topic_t *rkt);
    int (*produce)(rd_kafka_topic_t *rkt, int32_t partition, int msgflags, void *payload, size_t len,
                   const void *key, size_t keylen, void *msg_opaque);
    rd_kafka_resp_err_t (*last_error)(void);
    rd_kafka_resp_err_t (*conf_add_on_new)(rd_kafka_conf_t *conf, const char *ic_name, on_new_f *on_new,
                                           void *ic_opaque);
    rd_kafka_resp_err_t (*conf_add_on_conf_destroy)(rd_kafka_conf_t *conf, const char *ic_name,
                                                    on_conf_destroy_f *on_conf_destroy, void *ic_opaque);
    rd_kafka_resp_err_t (*add_on_destroy)(rd_kafka_t *rk, const char *ic_name, on_destroy_f *on_destroy,
                                          void *ic_opaque);
    rd_kafka_resp_err_t (*add_on_acknowledgement)(rd_kafka_t *rk, const char *ic_name,
                                                  on_acknowledgement_f *on_acknowledgement, void *ic_opaque);
    const char *(*version_str)(void);
} rk;

static volatile int bound; /* every function above found */

/* Error codes the accounting tells apart, given by Python at bind(). */
#define MAX_CODES 8
static int fenced_codes[MAX_CODES], fenced_count;
static int purged_codes[MAX_CODES], purged_count;

static const char IC_NAME[] = "ticdc_sink_native";
#define MAX_FAILURES 5

/* -- a producer's state */

typedef struct {
    char *topic;
    int32_t partition;
    int64_t first, last; /* the first acknowledged offset, the highest */
} span_t;

typedef struct {
    char *topic;
    int32_t partition;
    rd_kafka_resp_err_t err;
} failure_t;

typedef struct state {
    pthread_mutex_t lock; /* the counts below: on_acknowledgement runs on librdkafka's threads */
    int64_t acknowledged, failed; /* since the last take() */
    rd_kafka_resp_err_t fenced;    /* the first fencing error, 0 for none */
    failure_t failures[MAX_FAILURES];
    int failure_count, failures_taken;
    span_t *spans; /* since the last take() */
    size_t span_count, span_capacity, last_span;

    /* The registry's, under registry_lock: */
    rd_kafka_t *rk;      /* set by on_new */
    void *handle;        /* rd_kafka_opaque(rk), looked up after rd_kafka_new() returned */
    int registered;      /* between on_new and on_destroy: rk may be used */
    int users;           /* produce()/take() calls using rk now; on_destroy waits for none */
    struct state *next;
} state_t;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t registry_idle = PTHREAD_COND_INITIALIZER;
static state_t *registry;

/* Set while this thread is in produce(): librdkafka calls on_acknowledgement from within rd_kafka_produce() for a
 * message it refuses (an unknown partition), and such a message was never enqueued, so it is not counted. */
static __thread int producing;

static int is_code(const int *codes, int count, rd_kafka_resp_err_t err) {
    for (int i = 0; i < count; i++)
        if (codes[i] == err)
            return 1;
    return 0;
}

static void unregister(state_t *state) {
    /* registry_lock held */
    for (state_t **p = &registry; *p; p = &(*p)->next)
        if (*p == state) {
            *p = state->next;
            break;
        }
    state->registered = 0;
    state->next = NULL;
}

static void clear_spans(state_t *state) {
    for (size_t i = 0; i < state->span_count; i++)
        free(state->spans[i].topic);
    state->span_count = 0;
    state->last_span = 0;
}

static void state_free(state_t *state) {
    clear_spans(state);
    free(state->spans);
    for (int i = 0; i < state->failure_count; i++)
        free(state->failures[i].topic);
    pthread_mutex_destroy(&state->lock);
    free(state);
}

/* -- the interceptors */

static rd_kafka_resp_err_t on_acknowledgement(rd_kafka_t *client, rd_kafka_message_t *message, void *ic_opaque) {
    state_t *state = ic_opaque;
    if (message->_private != NULL || producing)
        return 0; /* confluent-kafka's own message, or one produce() is being refused */
    const char *topic = message->rkt ? rk.topic_name(message->rkt) : "";
    pthread_mutex_lock(&state->lock);
    if (message->err == 0) {
        state->acknowledged++;
        span_t *span = NULL;
        if (state->span_count) {
            span_t *last = &state->spans[state->last_span];
            if (last->partition == message->partition && strcmp(last->topic, topic) == 0)
                span = last;
        }
        for (size_t i = 0; !span && i < state->span_count; i++)
            if (state->spans[i].partition == message->partition && strcmp(state->spans[i].topic, topic) == 0) {
                span = &state->spans[i];
                state->last_span = i;
            }
        if (span) {
            if (message->offset > span->last)
                span->last = message->offset;
        } else {
            char *copy = strdup(topic);
            if (copy && state->span_count == state->span_capacity) {
                size_t capacity = state->span_capacity ? 2 * state->span_capacity : 16;
                span_t *grown = realloc(state->spans, capacity * sizeof(*grown));
                if (grown) {
                    state->spans = grown;
                    state->span_capacity = capacity;
                }
            }
            if (copy && state->span_count < state->span_capacity) {
                state->last_span = state->span_count++;
                state->spans[state->last_span] = (span_t){copy, message->partition, message->offset,
                                                          message->offset};
            } else {
                free(copy); /* out of memory: the span is left out, the count is kept */
            }
        }
    } else {
        state->failed++;
        if (!state->fenced && is_code(fenced_codes, fenced_count, message->err))
            state->fenced = message->err;
        /* A purged message's reason is what purged it (the producer's log says): counted, not described. */
        if (!is_code(purged_codes, purged_count, message->err) && state->failure_count < MAX_FAILURES) {
            int seen = 0;
            for (int i = 0; i < state->failure_count && !seen; i++)
                seen = state->failures[i].err == message->err && state->failures[i].partition == message->partition
                       && strcmp(state->failures[i].topic, topic) == 0;
            char *copy = seen ? NULL : strdup(topic);
            if (copy)
                state->failures[state->failure_count++] = (failure_t){copy, message->partition, message->err};
        }
    }
    pthread_mutex_unlock(&state->lock);
    return 0;
}

static rd_kafka_resp_err_t on_destroy(rd_kafka_t *client, void *ic_opaque) {
    /* rd_kafka_destroy() (or a failed rd_kafka_new()): rk may no longer be used, once no call is using it. The state
     * lives on until its configuration is destroyed, after librdkafka's last thread ended: a message purged at
     * destruction still passes through on_acknowledgement after this. */
    state_t *state = ic_opaque;
    pthread_mutex_lock(&registry_lock);
    while (state->users > 0)
        pthread_cond_wait(&registry_idle, &registry_lock);
    if (state->registered)
        unregister(state);
    pthread_mutex_unlock(&registry_lock);
    return 0;
}

static rd_kafka_resp_err_t on_new(rd_kafka_t *client, const rd_kafka_conf_t *conf, void *ic_opaque, char *errstr,
                                  size_t errstr_size) {
    /* librdkafka allows nothing here but adding interceptors: the opaque is read once rd_kafka_new() returned. */
    state_t *state = ic_opaque;
    rd_kafka_resp_err_t err = rk.add_on_acknowledgement(client, IC_NAME, on_acknowledgement, state);
    if (!err)
        err = rk.add_on_destroy(client, IC_NAME, on_destroy, state);
    if (err) {
        snprintf(errstr, errstr_size, "ticdc_sink_native: could not add its interceptors (error %d)", err);
        return err;
    }
    pthread_mutex_lock(&registry_lock);
    state->rk = client;
    state->handle = NULL;
    state->registered = 1;
    state->next = registry;
    registry = state;
    pthread_mutex_unlock(&registry_lock);
    return 0;
}

static rd_kafka_resp_err_t on_conf_destroy(void *ic_opaque) {
    state_t *state = ic_opaque;
    pthread_mutex_lock(&registry_lock);
    if (state->registered)
        unregister(state);
    pthread_mutex_unlock(&registry_lock);
    state_free(state);
    return 0;
}

/* The plugin's entry point: librdkafka calls it when plugin.library.paths names this file. */
__attribute__((visibility("default"))) rd_kafka_resp_err_t conf_init(rd_kafka_conf_t *conf, void **plug_opaquep,
                                                                     char *errstr, size_t errstr_size) {
    if (!bound) {
        snprintf(errstr, errstr_size, "ticdc_sink_native: loaded as a plugin before ticdc_sink_native.bind()");
        return RD_KAFKA_RESP_ERR__FAIL;
    }
    state_t *state = calloc(1, sizeof(*state));
    if (!state) {
        snprintf(errstr, errstr_size, "ticdc_sink_native: out of memory");
        return RD_KAFKA_RESP_ERR__FAIL;
    }
    pthread_mutex_init(&state->lock, NULL);
    rd_kafka_resp_err_t err = rk.conf_add_on_new(conf, IC_NAME, on_new, state);
    if (!err)
        err = rk.conf_add_on_conf_destroy(conf, IC_NAME, on_conf_destroy, state);
    if (err) {
        /* An on_new already added keeps its pointer: leave the state allocated rather than free it under it. */
        snprintf(errstr, errstr_size, "ticdc_sink_native: could not add its interceptors (error %d)", err);
        return err;
    }
    *plug_opaquep = state;
    return 0;
}

/* -- Python's side */

/* The state of the producer whose Handle is at `handle`, marked in use (release with release()); NULL when there
 * is none (the producer was made without the plugin, or destroyed). */
static state_t *acquire(uintptr_t handle) {
    state_t *found = NULL;
    pthread_mutex_lock(&registry_lock);
    for (state_t *state = registry; state && !found; state = state->next) {
        if (!state->handle)
            state->handle = rk.opaque(state->rk);
        if ((uintptr_t)state->handle == handle)
            found = state;
    }
    if (found)
        found->users++;
    pthread_mutex_unlock(&registry_lock);
    return found;
}

static void release(state_t *state) {
    pthread_mutex_lock(&registry_lock);
    if (--state->users == 0)
        pthread_cond_broadcast(&registry_idle);
    pthread_mutex_unlock(&registry_lock);
}

static PyObject *py_bind(PyObject *self, PyObject *args) {
    const char *cimpl_path;
    PyObject *fenced, *purged;
    if (!PyArg_ParseTuple(args, "sO!O!", &cimpl_path, &PyTuple_Type, &fenced, &PyTuple_Type, &purged))
        return NULL;
    if (PyTuple_GET_SIZE(fenced) > MAX_CODES || PyTuple_GET_SIZE(purged) > MAX_CODES)
        return PyErr_Format(PyExc_ValueError, "at most %d codes each", MAX_CODES);
    int codes[2][MAX_CODES];
    for (int t = 0; t < 2; t++) {
        PyObject *tuple = t ? purged : fenced;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++) {
            codes[t][i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(tuple, i));
            if (PyErr_Occurred())
                return NULL;
        }
    }
    /* The module confluent-kafka loaded: a lookup through its handle searches it and its dependencies, which is
     * the librdkafka it calls, whatever else is loaded. */
    void *cimpl = dlopen(cimpl_path, RTLD_NOW | RTLD_NOLOAD);
    if (!cimpl)
        return PyErr_Format(PyExc_OSError, "%s is not loaded: %s", cimpl_path, dlerror());
    static const struct {
        const char *name;
        size_t offset;
    } functions[] = {
#define FUNCTION(field, symbol) {#symbol, offsetof(struct librdkafka, field)}
        FUNCTION(opaque, rd_kafka_opaque),
        FUNCTION(topic_new, rd_kafka_topic_new),
        FUNCTION(topic_destroy, rd_kafka_topic_destroy),
        FUNCTION(topic_name, rd_kafka_topic_name),
        FUNCTION(produce, rd_kafka_produce),
        FUNCTION(last_error, rd_kafka_last_error),
        FUNCTION(conf_add_on_new, rd_kafka_conf_interceptor_add_on_new),
        FUNCTION(conf_add_on_conf_destroy, rd_kafka_conf_interceptor_add_on_conf_destroy),
        FUNCTION(add_on_destroy, rd_kafka_interceptor_add_on_destroy),
        FUNCTION(add_on_acknowledgement, rd_kafka_interceptor_add_on_acknowledgement),
        FUNCTION(version_str, rd_kafka_version_str),
#undef FUNCTION
    };
    void *found[sizeof(functions) / sizeof(functions[0])];
    for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++) {
        dlerror();
        found[i] = dlsym(cimpl, functions[i].name);
        if (!found[i]) {
            dlclose(cimpl);
            return PyErr_Format(PyExc_OSError, "%s's librdkafka has no %s", cimpl_path, functions[i].name);
        }
    }
    Dl_info where;
    PyObject *library = PyUnicode_DecodeFSDefault(dladdr(found[0], &where) && where.dli_fname ? where.dli_fname : "?");
    dlclose(cimpl); /* Python keeps it loaded */
    if (!library)
        return NULL;
    if (bound) { /* once per process: the producers made since use these functions */
        if (memcmp(&found[0], &rk.opaque, sizeof(void *)) != 0) {
            Py_DECREF(library);
            return PyErr_Format(PyExc_OSError, "bound to another librdkafka already");
        }
    } else {
        for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++)
            memcpy((char *)&rk + functions[i].offset, &found[i], sizeof(void *));
        memcpy(fenced_codes, codes[0], sizeof(codes[0]));
        fenced_count = (int)PyTuple_GET_SIZE(fenced);
        memcpy(purged_codes, codes[1], sizeof(codes[1]));
        purged_count = (int)PyTuple_GET_SIZE(purged);
        bound = 1;
    }
    PyObject *result = Py_BuildValue("(Ns)", library, rk.version_str());
    return result;
}

/* The producer handle a Python call names; 0 with an exception set where the call cannot be served. */
static uintptr_t handle_of(PyObject *arg) {
    if (!bound) {
        PyErr_Format(PyExc_RuntimeError, "ticdc_sink_native.bind() was not called");
        return 0;
    }
    uintptr_t handle = (uintptr_t)PyLong_AsUnsignedLongLong(arg);
    return PyErr_Occurred() ? 0 : handle;
}

static PyObject *py_registered(PyObject *self, PyObject *arg) {
    uintptr_t handle = handle_of(arg);
    if (PyErr_Occurred())
        return NULL;
    state_t *state = acquire(handle);
    if (state)
        release(state);
    return PyBool_FromLong(state != NULL);
}

/*
 * produce(handle, topics, topic_index, partitions, values, keys, start, end) -> (enqueued, error)
 *
 * Messages start..end-1, in order: topic topics[topic_index[i]] (topic_index 0: every message topics[0]),
 * partition partitions[i] (int32 buffers' addresses), value and key from the Arrow buffers (validity, offsets, data,
 * offset, large) of `values` and of `keys` (None: no keys). Stops at the first message librdkafka refuses and says
 * how many were enqueued before it and why (0 when none was refused); the refused one and those after it are not
 * enqueued, so a partition's messages stay in order whatever the caller does next.
 */
static PyObject *py_produce(PyObject *self, PyObject *args) {
    unsigned long long handle, topic_index_address, partitions_address;
    PyObject *topics, *values_tuple, *keys_tuple;
    Py_ssize_t start, end;
    binary_t values, keys;
    if (!PyArg_ParseTuple(args, "KO!KKOOnn", &handle, &PyTuple_Type, &topics, &topic_index_address,
                          &partitions_address, &values_tuple, &keys_tuple, &start, &end))
        return NULL;
    if (!bound)
        return PyErr_Format(PyExc_RuntimeError, "ticdc_sink_native.bind() was not called");
    if (!parse_binary(values_tuple, &values) || !parse_binary(keys_tuple, &keys))
        return NULL;
    if (values_tuple == Py_None)
        return PyErr_Format(PyExc_ValueError, "values are required");
    Py_ssize_t topic_count = PyTuple_GET_SIZE(topics);
    if (topic_count < 1 || !partitions_address || start < 0 || end < start)
        return PyErr_Format(PyExc_ValueError, "bad arguments");
    const char **names = PyMem_Calloc((size_t)topic_count, sizeof(*names));
    rd_kafka_topic_t **handles = PyMem_Calloc((size_t)topic_count, sizeof(*handles));
    if (!names || !handles) {
        PyMem_Free(names);
        PyMem_Free(handles);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t t = 0; t < topic_count; t++) {
        names[t] = PyBytes_Check(PyTuple_GET_ITEM(topics, t)) ? PyBytes_AS_STRING(PyTuple_GET_ITEM(topics, t)) : NULL;
        if (!names[t]) {
            PyMem_Free(names);
            PyMem_Free(handles);
            return PyErr_Format(PyExc_TypeError, "topics are bytes");
        }
    }
    const int32_t *topic_index = (const int32_t *)(uintptr_t)topic_index_address;
    const int32_t *partitions = (const int32_t *)(uintptr_t)partitions_address;
    for (Py_ssize_t i = start; topic_index && i < end; i++)
        if (topic_index[i] < 0 || topic_index[i] >= topic_count) {
            PyMem_Free(names);
            PyMem_Free(handles);
            return PyErr_Format(PyExc_ValueError, "message %zd: topic index %d of %zd topics", i, topic_index[i],
                                topic_count);
        }
    state_t *state = acquire((uintptr_t)handle);
    if (!state) {
        PyMem_Free(names);
        PyMem_Free(handles);
        return PyErr_Format(PyExc_RuntimeError, "Producer has been closed");
    }

    Py_ssize_t i = start;
    rd_kafka_resp_err_t err = 0;
    Py_BEGIN_ALLOW_THREADS
    /* The topics' handles first, outside the producing window: a new topic's metadata can fail messages waiting
     * for it, whose on_acknowledgement must count them. */
    int32_t refused_topic = -1; /* a topic librdkafka gave no handle, refused at its first message below */
    rd_kafka_resp_err_t topic_err = 0;
    Py_ssize_t made = 0;
    for (Py_ssize_t m = start; m < end && made < topic_count && refused_topic < 0; m++) {
        int32_t t = topic_index ? topic_index[m] : 0;
        if (handles[t])
            continue;
        if ((handles[t] = rk.topic_new(state->rk, names[t], NULL))) {
            made++;
        } else {
            refused_topic = t;
            topic_err = rk.last_error();
        }
    }
    producing = 1;
    for (; i < end; i++) {
        int32_t t = topic_index ? topic_index[i] : 0;
        if (t == refused_topic || !handles[t]) { /* (no topic after the refused one is reached) */
            err = topic_err ? topic_err : RD_KAFKA_RESP_ERR__INVALID_ARG;
            break;
        }
        size_t value_len, key_len;
        const char *value = binary_at(&values, i, &value_len);
        const char *key = binary_at(&keys, i, &key_len);
        if (rk.produce(handles[t], partitions[i], RD_KAFKA_MSG_F_COPY, (void *)value, value_len, key, key_len,
                       NULL) == -1) {
            err = rk.last_error();
            if (!err)
                err = RD_KAFKA_RESP_ERR__FAIL;
            break;
        }
    }
    producing = 0;
    for (Py_ssize_t t = 0; t < topic_count; t++)
        if (handles[t])
            rk.topic_destroy(handles[t]);
    Py_END_ALLOW_THREADS
    release(state);
    PyMem_Free(names);
    PyMem_Free(handles);
    return Py_BuildValue("(ni)", i - start, err);
}

/*
 * take(handle) -> (acknowledged, failed, fenced, failures, spans), or None when the producer has no state
 *
 * What was delivered since the last take(): the counts, the first fencing error code (0: none; kept, so told
 * again), failures not told before as (topic, partition, error code), and per (topic, partition) the first and the
 * highest acknowledged offset as (topic, partition, first, last).
 */
static PyObject *py_take(PyObject *self, PyObject *arg) {
    uintptr_t handle = handle_of(arg);
    if (PyErr_Occurred())
        return NULL;
    state_t *state = acquire(handle);
    if (!state)
        Py_RETURN_NONE;
    /* Moved out under the lock, made into Python objects after it. */
    pthread_mutex_lock(&state->lock);
    int64_t acknowledged = state->acknowledged, failed = state->failed;
    rd_kafka_resp_err_t fenced = state->fenced;
    state->acknowledged = state->failed = 0;
    int first_failure = state->failures_taken, failure_count = state->failure_count;
    failure_t failures[MAX_FAILURES];
    memcpy(failures, state->failures, sizeof(failures)); /* their topics stay the state's */
    state->failures_taken = failure_count;
    span_t *spans = state->spans;
    size_t span_count = state->span_count;
    state->spans = NULL;
    state->span_count = state->span_capacity = state->last_span = 0;
    pthread_mutex_unlock(&state->lock);

    PyObject *failure_list = PyList_New(0), *span_list = PyList_New(0), *result = NULL;
    for (int f = first_failure; failure_list && f < failure_count; f++) {
        PyObject *item = Py_BuildValue("(sii)", failures[f].topic, failures[f].partition, failures[f].err);
        if (!item || PyList_Append(failure_list, item) < 0)
            Py_CLEAR(failure_list);
        Py_XDECREF(item);
    }
    for (size_t s = 0; span_list && s < span_count; s++) {
        PyObject *item = Py_BuildValue("(siLL)", spans[s].topic, spans[s].partition, (long long)spans[s].first,
                                       (long long)spans[s].last);
        if (!item || PyList_Append(span_list, item) < 0)
            Py_CLEAR(span_list);
        Py_XDECREF(item);
    }
    for (size_t s = 0; s < span_count; s++)
        free(spans[s].topic);
    free(spans);
    release(state);
    if (failure_list && span_list)
        result = Py_BuildValue("(LLiOO)", (long long)acknowledged, (long long)failed, fenced, failure_list,
                               span_list);
    Py_XDECREF(failure_list);
    Py_XDECREF(span_list);
    return result;
}

static PyMethodDef methods[] = {
    {"bind", py_bind, METH_VARARGS,
     "bind(cimpl_path, fenced_codes, purged_codes) -> (librdkafka path, version): use the librdkafka that "
     "confluent-kafka's cimpl module calls"},
    {"registered", py_registered, METH_O, "registered(id(producer)) -> whether the producer has a state here"},
    {"produce", py_produce, METH_VARARGS,
     "produce(id(producer), topics, topic_index_address, partitions_address, values, keys, start, end) -> "
     "(enqueued, error code)"},
    {"take", py_take, METH_O,
     "take(id(producer)) -> (acknowledged, failed, fenced code, failures, spans) since the last take(), or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_batch_produce",
                                    "ticdc-sink's native producer path (see native/README.md)", -1, methods};

PyMODINIT_FUNC PyInit__batch_produce(void) { return PyModule_Create(&module); }
