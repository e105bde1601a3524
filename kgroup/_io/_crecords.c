/*
 * kgroup._io._crecords: the records of a Kafka v2 record batch, decoded straight into
 * kgroup ConsumerRecord tuples.
 *
 * The record format is Kafka's (the Kafka documentation, "Record Batch" and "Record" under
 * "Message Format"; Java's org.apache.kafka.common.record.DefaultRecord):
 *
 *   Record => Length:varint Attributes:int8 TimestampDelta:varlong OffsetDelta:varint
 *             KeyLength:varint Key ValueLength:varint Value HeadersCount:varint
 *             [HeaderKeyLength:varint HeaderKey HeaderValueLength:varint HeaderValue]
 *
 * Varints are zigzag-encoded (protobuf's), negative lengths are null (-1 is written). The batch header, its CRC,
 * decompression and the transactional rules are the caller's (kgroup/_io/record_decoder.py);
 * this module parses the (decompressed) records section and builds one ConsumerRecord per
 * record, skipping those below a minimum offset without building anything for them.
 *
 * Every read is bounds-checked: a malformed record raises ValueError, never reads past the
 * buffer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* the fields of kgroup.types.ConsumerRecord, in its order */
#define N_FIELDS 9

static const char *
read_varlong(const char *p, const char *end, int64_t *out)
{
    uint64_t raw = 0;
    int shift = 0;
    while (p < end) {
        unsigned char b = (unsigned char)*p++;
        raw |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)((raw >> 1) ^ (~(raw & 1) + 1));
            return p;
        }
        shift += 7;
        if (shift > 63) {
            PyErr_SetString(PyExc_ValueError, "varint too long");
            return NULL;
        }
    }
    PyErr_SetString(PyExc_ValueError, "record truncated (varint)");
    return NULL;
}

static const char *
read_varint(const char *p, const char *end, int64_t *out)
{
    p = read_varlong(p, end, out);
    if (p != NULL && (*out > INT32_MAX || *out < INT32_MIN)) {
        PyErr_SetString(PyExc_ValueError, "varint out of int32 range");
        return NULL;
    }
    return p;
}

/* nullable bytes: *obj a new bytes object or None (when want is 0, nothing is built) */
static const char *
read_bytes(const char *p, const char *end, PyObject **obj, int want)
{
    int64_t len;
    p = read_varint(p, end, &len);
    if (p == NULL)
        return NULL;
    if (len < 0) { /* any negative length is null, as in Java's DefaultRecord.readFrom */
        if (want) {
            Py_INCREF(Py_None);
            *obj = Py_None;
        }
        return p;
    }
    if (len > end - p) {
        PyErr_SetString(PyExc_ValueError, "record truncated (bytes)");
        return NULL;
    }
    if (want) {
        *obj = PyBytes_FromStringAndSize(p, (Py_ssize_t)len);
        if (*obj == NULL)
            return NULL;
    }
    return p + len;
}

static PyObject *
read_headers(const char **pp, const char *end, int64_t count, PyObject *empty, int want)
{
    const char *p = *pp;
    PyObject *headers, *key = NULL, *value = NULL, *pair;
    int64_t i, klen;
    if (count > end - p) { /* a header takes at least two bytes */
        PyErr_Format(PyExc_ValueError, "invalid header count %lld", (long long)count);
        return NULL;
    }
    if (count == 0 || !want) { /* !want: walked below, nothing built; empty returned */
        headers = empty;
        Py_INCREF(empty);
    } else if ((headers = PyTuple_New((Py_ssize_t)count)) == NULL)
        return NULL;
    for (i = 0; i < count; i++) {
        p = read_varint(p, end, &klen);
        if (p == NULL)
            goto fail;
        if (klen < 0) {
            PyErr_Format(PyExc_ValueError, "invalid negative header key size %lld", (long long)klen);
            goto fail;
        }
        if (klen > end - p) {
            PyErr_SetString(PyExc_ValueError, "record truncated (header key)");
            goto fail;
        }
        if (!want) {
            p = read_bytes(p + klen, end, NULL, 0);
            if (p == NULL)
                goto fail;
            continue;
        }
        key = PyUnicode_DecodeUTF8(p, (Py_ssize_t)klen, "strict");
        if (key == NULL)
            goto fail;
        p += klen;
        p = read_bytes(p, end, &value, 1);
        if (p == NULL)
            goto fail;
        pair = PyTuple_New(2);
        if (pair == NULL)
            goto fail;
        PyTuple_SET_ITEM(pair, 0, key);
        PyTuple_SET_ITEM(pair, 1, value);
        key = value = NULL;
        PyTuple_SET_ITEM(headers, (Py_ssize_t)i, pair);
    }
    *pp = p;
    return headers;
fail:
    Py_XDECREF(key);
    Py_XDECREF(value);
    Py_DECREF(headers);
    return NULL;
}

PyDoc_STRVAR(decode_doc,
"decode(cls, buffer, pos, count, limit, topic, partition, base_offset, first_timestamp,\n"
"       log_append_time, timestamp_type, leader_epoch, min_offset) -> (records, pos, count)\n"
"\n"
"Up to ``limit`` records of ``cls`` (a tuple type of nine fields: topic, partition, offset,\n"
"key, value, headers, timestamp, timestamp_type, leader_epoch) decoded from ``buffer``\n"
"(a bytes-like object) at ``pos``, where ``count`` records remain. Records below\n"
"``min_offset`` are skipped. ``log_append_time`` is the batch's max timestamp when its\n"
"timestamp type is LogAppendTime (every record gets it), else None.\n"
"\n"
"Returns the records, the position after the last record read and how many remain. When\n"
"none remain the buffer must be consumed to its end. Raises ValueError for a malformed\n"
"record (UnicodeDecodeError for a header key that is not UTF-8).");

static PyObject *
decode(PyObject *self, PyObject *args)
{
    PyTypeObject *cls;
    Py_buffer view;
    Py_ssize_t pos, count, limit;
    PyObject *topic, *partition, *timestamp_type, *leader_epoch, *log_append_obj, *empty = NULL;
    long long base_offset, first_timestamp, log_append_time = 0, min_offset;
    int log_append = 0;
    PyObject *out = NULL, *result = NULL;
    const char *p, *end;

    if (!PyArg_ParseTuple(args, "O!y*nnnUOLLOOOL", &PyType_Type, &cls, &view, &pos, &count,
                          &limit, &topic, &partition, &base_offset, &first_timestamp,
                          &log_append_obj, &timestamp_type, &leader_epoch, &min_offset))
        return NULL;
    if (!PyType_IsSubtype(cls, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "cls must be a tuple type");
        goto done;
    }
    if (log_append_obj != Py_None) {
        log_append_time = PyLong_AsLongLong(log_append_obj);
        if (log_append_time == -1 && PyErr_Occurred())
            goto done;
        log_append = 1;
    }
    if (pos < 0 || pos > view.len || count < 0 || limit < 0) {
        PyErr_SetString(PyExc_ValueError, "pos, count or limit out of range");
        goto done;
    }
    empty = PyTuple_New(0);
    out = PyList_New(0);
    if (empty == NULL || out == NULL)
        goto done;
    p = (const char *)view.buf + pos;
    end = (const char *)view.buf + view.len;
    while (count > 0 && PyList_GET_SIZE(out) < limit) {
        int64_t length, ts_delta, offset_delta, attrs_unused, nheaders;
        const char *start, *rec_end;
        long long offset;
        int want;
        PyObject *key = NULL, *value = NULL, *headers = NULL, *record;

        p = read_varint(p, end, &length);
        if (p == NULL)
            goto done;
        if (length < 0 || length > end - p) {
            PyErr_Format(PyExc_ValueError, "invalid record length %lld", (long long)length);
            goto done;
        }
        start = p;
        rec_end = p + length;
        if (p >= rec_end) {
            PyErr_SetString(PyExc_ValueError, "record truncated (attributes)");
            goto done;
        }
        attrs_unused = (unsigned char)*p++;
        (void)attrs_unused;
        p = read_varlong(p, rec_end, &ts_delta);
        if (p == NULL)
            goto done;
        p = read_varint(p, rec_end, &offset_delta);
        if (p == NULL)
            goto done;
        offset = base_offset + offset_delta;
        want = offset >= min_offset;
        p = read_bytes(p, rec_end, &key, want);
        if (p == NULL)
            goto done;
        p = read_bytes(p, rec_end, &value, want);
        if (p == NULL)
            goto record_fail;
        p = read_varint(p, rec_end, &nheaders);
        if (p == NULL)
            goto record_fail;
        if (nheaders < 0) {
            PyErr_Format(PyExc_ValueError, "found invalid number of record headers %lld", (long long)nheaders);
            goto record_fail;
        }
        headers = read_headers(&p, rec_end, nheaders, empty, want);
        if (headers == NULL)
            goto record_fail;
        if (p != rec_end) {
            PyErr_Format(PyExc_ValueError,
                         "invalid record size: expected to read %lld bytes in record payload, but instead read %lld",
                         (long long)length, (long long)(p - start));
            goto record_fail;
        }
        count--;
        if (want) {
            record = cls->tp_alloc(cls, N_FIELDS);
            if (record == NULL)
                goto record_fail;
            Py_INCREF(topic);
            PyTuple_SET_ITEM(record, 0, topic);
            Py_INCREF(partition);
            PyTuple_SET_ITEM(record, 1, partition);
            PyTuple_SET_ITEM(record, 3, key);
            PyTuple_SET_ITEM(record, 4, value);
            PyTuple_SET_ITEM(record, 5, headers);
            key = value = headers = NULL;
            Py_INCREF(timestamp_type);
            PyTuple_SET_ITEM(record, 7, timestamp_type);
            Py_INCREF(leader_epoch);
            PyTuple_SET_ITEM(record, 8, leader_epoch);
            {
                PyObject *o = PyLong_FromLongLong(offset);
                PyObject *t = PyLong_FromLongLong(log_append ? log_append_time
                                                                       : first_timestamp + ts_delta);
                if (o == NULL || t == NULL) {
                    Py_XDECREF(o);
                    Py_XDECREF(t);
                    Py_INCREF(Py_None);
                    PyTuple_SET_ITEM(record, 2, Py_None);
                    Py_INCREF(Py_None);
                    PyTuple_SET_ITEM(record, 6, Py_None);
                    Py_DECREF(record);
                    goto done;
                }
                PyTuple_SET_ITEM(record, 2, o);
                PyTuple_SET_ITEM(record, 6, t);
            }
            if (PyList_Append(out, record) < 0) {
                Py_DECREF(record);
                goto done;
            }
            Py_DECREF(record);
        } else {
            Py_CLEAR(headers); /* a skipped record's: the empty tuple */
        }
        continue;
record_fail:
        Py_XDECREF(key);
        Py_XDECREF(value);
        Py_XDECREF(headers);
        goto done;
    }
    if (count == 0 && p != end) {
        PyErr_Format(PyExc_ValueError, "%lld unconsumed bytes after all records consumed", (long long)(end - p));
        goto done;
    }
    result = Py_BuildValue("(Onn)", out, (Py_ssize_t)(p - (const char *)view.buf), count);
done:
    Py_XDECREF(out);
    Py_XDECREF(empty);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS, decode_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kgroup._io._crecords",
    "Kafka v2 records decoded into ConsumerRecord tuples (kgroup/_io/record_decoder.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__crecords(void)
{
    return PyModule_Create(&module);
}
