#ifndef MEMORYPRESSURE_CLIBPQ_H
#define MEMORYPRESSURE_CLIBPQ_H
// libpq, PostgreSQL's client library, from Debian's libpq-dev (pkg-config libpq).
#include <libpq-fe.h>
#endif
