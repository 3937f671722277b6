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

#endif
