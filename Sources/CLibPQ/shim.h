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

#ifdef __linux__
#include <errno.h>
#include <sys/epoll.h>

/* epoll for PQSocketWaiter (Swift does not import the packed epoll_event reliably). */
static inline int modgud_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

/* Arms a one-shot watch of `fd` for reading (or writing), re-arming or adding it. 0, or -1. */
static inline int modgud_epoll_arm(int epoll, int fd, int writable) {
    struct epoll_event event;
    event.events = (writable ? EPOLLOUT : EPOLLIN) | EPOLLONESHOT;
    event.data.fd = fd;
    if (epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event) == 0) return 0;
    if (errno != ENOENT) return -1;
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}

/* Waits for ready descriptors and writes them to `fds`; returns how many (0 on EINTR). */
static inline int modgud_epoll_wait(int epoll, int *fds, int capacity) {
    struct epoll_event events[64];
    if (capacity > 64) capacity = 64;
    int ready = epoll_wait(epoll, events, capacity, -1);
    if (ready < 0) return 0;
    for (int i = 0; i < ready; i++) fds[i] = events[i].data.fd;
    return ready;
}
#endif

#endif
