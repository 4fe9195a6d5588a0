// The counters' layout and readers are all in include/AllocCounter.h (static inline); SwiftPM
// needs one source file in a C target.
#include "AllocCounter.h"
