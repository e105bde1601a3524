/*
 * kgroup._io._crecv: the rest of one response received from a non-blocking socket in one call,
 * without holding the GIL.
 *
 * socket.recv_into releases the GIL for each system call and takes it back after it. While
 * another thread runs Python code (the poll thread handing out records), taking it back waits
 * up to the interpreter's switch interval (sys.getswitchinterval(), 5 ms by default) per call,
 * so a response of megabytes arrived at a few socket buffers per 5 ms however fast the broker
 * sent it. recv_frame reads as socket.recv_into does, but loops over recv(2) while bytes keep
 * coming, with the GIL released once for the whole loop (kgroup/_io/receive.py).
 *
 * POSIX only (recv with MSG_DONTWAIT, poll); elsewhere the module defines nothing and the
 * receive path uses socket.recv_into.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifndef _WIN32
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>

PyDoc_STRVAR(recv_frame_doc,
"recv_frame(fd, buffer, start, wait_ms) -> int\n"
"\n"
"Receive from the socket fd into buffer[start:], as socket.recv_into does, until that part\n"
"is full, the peer closed, an error, or no byte came for wait_ms (ms, >= 0) after the last.\n"
"Returns the bytes received (> 0), or 0 when the peer had closed before any byte. Raises\n"
"OSError as recv_into does (BlockingIOError: nothing to read now) when nothing was received;\n"
"after some bytes, an error or a close is met again by the next call. ValueError: start is\n"
"not inside the buffer, or wait_ms < 0. The GIL is released while receiving.");

static PyObject *
recv_frame(PyObject *self, PyObject *args)
{
    int fd, wait_ms;
    Py_buffer view;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "iw*ni", &fd, &view, &start, &wait_ms)) {
        return NULL;
    }
    if (start < 0 || start >= view.len || wait_ms < 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "start must be inside the buffer and wait_ms >= 0");
        return NULL;
    }
    char *p = (char *)view.buf + start;
    size_t want = (size_t)(view.len - start);
    size_t total = 0;
    int saved_errno = 0;
    Py_BEGIN_ALLOW_THREADS
    while (total < want) {
        ssize_t n = recv(fd, p + total, want - total, MSG_DONTWAIT);
        if (n > 0) {
            total += (size_t)n;
            continue;
        }
        if (n == 0) {
            break; /* the peer closed */
        }
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && total > 0 && wait_ms > 0) {
            struct pollfd pfd;
            pfd.fd = fd;
            pfd.events = POLLIN;
            pfd.revents = 0;
            if (poll(&pfd, 1, wait_ms) > 0) {
                continue; /* more came (or an error or a close, met by the next recv) */
            }
            errno = EAGAIN;
        }
        saved_errno = errno;
        break;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (total > 0 || saved_errno == 0) {
        return PyLong_FromSize_t(total);
    }
    errno = saved_errno;
    return PyErr_SetFromErrno(PyExc_OSError);
}
#endif

static PyMethodDef methods[] = {
#ifndef _WIN32
    {"recv_frame", recv_frame, METH_VARARGS, recv_frame_doc},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kgroup._io._crecv",
    "A response's bytes received without the GIL (kgroup/_io/receive.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__crecv(void)
{
    return PyModule_Create(&module);
}
