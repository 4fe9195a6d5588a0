#ifndef MEMORYPRESSURE_CZLIB_H
#define MEMORYPRESSURE_CZLIB_H
// zlib, from Debian's zlib1g-dev: the exporter gzips its answers (deflateInit2 is a macro, so
// the Swift side calls deflateInit2_ with the version and stream size the macro would pass).
#include <zlib.h>
#endif
