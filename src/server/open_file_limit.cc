#include "server/open_file_limit.h"

#include <sys/resource.h>

namespace taco::server {

int64_t raise_open_file_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    if (limit.rlim_cur < limit.rlim_max) {
        rlimit raised = limit;
        raised.rlim_cur = limit.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
    }
    return limit.rlim_cur == RLIM_INFINITY ? int64_t(1) << 62 : int64_t(limit.rlim_cur);
}

}  // namespace taco::server
