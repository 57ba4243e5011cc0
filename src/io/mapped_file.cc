#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace taco {

MappedFile::~MappedFile() {
    if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
}

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
    std::unique_ptr<MappedFile> file(new MappedFile());
    file->path_ = path;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return error("{}: cannot open: {}", path, std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        return error("{}: cannot stat: {}", path, std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return error("{}: not a regular file", path);
    }
    size_t file_bytes = size_t(st.st_size);
    if (file_bytes == 0) {  // mmap rejects zero-length mappings
        ::close(fd);
        return file;
    }
    void* mapping = mmap(nullptr, file_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    ::close(fd);
    if (mapping == MAP_FAILED) {
        return error("{}: mmap of {} bytes failed: {}", path, file_bytes, std::strerror(map_errno));
    }
    file->data_ = static_cast<const uint8_t*>(mapping);
    file->size_ = file_bytes;
    return file;
}

}  // namespace taco
