#ifndef MODGUD_CLIBPQ_SHIM_H
#define MODGUD_CLIBPQ_SHIM_H

#include <libpq-fe.h>
#include <poll.h>

/* PG_DIAG_* are character-literal macros that Swift cannot import: re-export them. */
static const int modgud_pg_diag_sqlstate = 'C';
static const int modgud_pg_diag_message_primary = 'M';
static const int modgud_pg_diag_message_detail = 'D';
static const int modgud_pg_diag_severity = 'V';
static const int modgud_pg_diag_constraint_name = 'n';

/* A notice processor that drops server NOTICEs instead of printing them to stderr. */
static inline void modgud_silent_notice_processor(void *arg, const char *message) {
    (void)arg; (void)message;
}
static inline void modgud_silence_notices(PGconn *conn) {
    PQsetNoticeProcessor(conn, modgud_silent_notice_processor, 0);
}

#include <errno.h>

/* poll(2) on one descriptor, retried on EINTR: its revents (0 when the time ran out), or -errno. */
static inline int modgud_poll_one(int fd, short events, int timeout) {
    struct pollfd descriptor = { .fd = fd, .events = events, .revents = 0 };
    for (;;) {
        int ready = poll(&descriptor, 1, timeout);
        if (ready > 0) return descriptor.revents;
        if (ready == 0) return 0;
        if (errno != EINTR) return -errno;
    }
}

#ifdef __linux__
#include <sys/epoll.h>
#include <sys/stat.h>

/* epoll for PQSocketWaiter (Swift does not import the packed epoll_event reliably).
   Every wrapper returns its error as -errno, read at once, never 0 or a bare -1: an error
   turned into "nothing happened" made the waiter's thread spin (issue 67). */

/* Creates the epoll instance: its descriptor, or -errno. */
static inline int modgud_epoll_create(void) {
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    return epoll >= 0 ? epoll : -errno;
}

/* Arms a one-shot watch of `fd` for reading (or writing), re-arming or adding it. 0, or -errno
   (EBADF for a closed descriptor, EPERM for one epoll cannot watch, EINVAL for a bad epoll). */
static inline int modgud_epoll_arm(int epoll, int fd, int writable) {
    struct epoll_event event;
    event.events = (writable ? EPOLLOUT : EPOLLIN) | EPOLLONESHOT;
    event.data.u64 = 0;
    event.data.fd = fd;
    if (epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event) == 0) return 0;
    if (errno != ENOENT) return -errno;
    if (epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) == 0) return 0;
    return -errno;
}

/* Waits up to `timeout` milliseconds (-1: no limit) for ready descriptors and writes them to
   `fds`; returns how many (0 when the time ran out), or -errno (-EINTR included). */
static inline int modgud_epoll_wait(int epoll, int *fds, int capacity, int timeout) {
    struct epoll_event events[64];
    if (capacity > 64) capacity = 64;
    int ready = epoll_wait(epoll, events, capacity, timeout);
    if (ready < 0) return -errno;
    for (int i = 0; i < ready; i++) fds[i] = events[i].data.fd;
    return ready;
}

/* The identity of the file `fd` refers to (device and inode): 0, or -errno (EBADF once closed).
   A descriptor closed under the waiter leaves epoll silently; its number may even be reused. */
static inline int modgud_descriptor_identity(int fd, unsigned long long *device, unsigned long long *inode) {
    struct stat info;
    if (fstat(fd, &info) != 0) return -errno;
    *device = (unsigned long long)info.st_dev;
    *inode = (unsigned long long)info.st_ino;
    return 0;
}
#endif

#endif
