#include "mock_hub.h"

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>  // std::exchange, which boost/asio/awaitable.hpp uses without including

#include <fmt/format.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace taco::server::testing {

struct MockHub::Impl {
    Impl() : acceptor_(ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
        port_ = acceptor_.local_endpoint().port();
        accept_thread_ = std::thread([this] { accept_loop(); });
    }

    std::string endpoint() const { return fmt::format("http://127.0.0.1:{}", port_); }

    void stop() {
        if (stopping_.exchange(true)) return;
        {  // wake the blocking accept
            boost::system::error_code ignored;
            boost::asio::ip::tcp::socket poke(ioc_);
            poke.connect({boost::asio::ip::make_address("127.0.0.1"), uint16_t(port_)}, ignored);
        }
        accept_thread_.join();
        boost::system::error_code ignored;
        acceptor_.close(ignored);  // later connections are refused
        {
            std::lock_guard<std::mutex> lock(mutex_);
            for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
        }
        for (auto& t : connections_) t.join();
    }

    using tcp = boost::asio::ip::tcp;
    struct Answer {
        int status = 200;
        std::vector<std::pair<std::string, std::string>> headers;
        std::string body;
        int64_t content_length = -1;  // -1: body.size()
        bool cut = false;             // send half the body, then close
    };

    void accept_loop() {
        while (!stopping_) {
            tcp::socket socket(ioc_);
            boost::system::error_code ec;
            acceptor_.accept(socket, ec);
            if (ec || stopping_) break;
            std::lock_guard<std::mutex> lock(mutex_);
            open_fds_.insert(socket.native_handle());
            connections_.emplace_back([this, s = std::move(socket)]() mutable { serve(std::move(s)); });
        }
    }

    void serve(tcp::socket socket) {
        namespace http = boost::beast::http;
        boost::beast::flat_buffer buffer;
        const int fd = socket.native_handle();
        for (;;) {
            http::request<http::string_body> req;
            boost::system::error_code ec;
            http::read(socket, buffer, req, ec);
            if (ec) break;
            Seen seen{std::string(req.method_string()), std::string(req.target()), std::string(req[http::field::range]),
                      std::string(req[http::field::authorization])};
            Answer answer = route(seen);
            std::string head = fmt::format("HTTP/1.1 {} X\r\n", answer.status);
            for (const auto& [name, value] : answer.headers) head += name + ": " + value + "\r\n";
            const int64_t length = answer.content_length >= 0 ? answer.content_length : int64_t(answer.body.size());
            head += fmt::format("Content-Length: {}\r\n\r\n", length);
            std::string out = head;
            if (seen.method != "HEAD") out += answer.cut ? answer.body.substr(0, answer.body.size() / 2) : answer.body;
            boost::asio::write(socket, boost::asio::buffer(out), ec);
            if (ec || answer.cut) break;
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            open_fds_.erase(fd);
        }
        boost::system::error_code ignored;
        socket.shutdown(tcp::socket::shutdown_both, ignored);
    }

    static Answer error_answer(int status, const std::string& code) {
        return Answer{status,
                      {{"X-Error-Code", code}, {"Content-Type", "application/json"}},
                      fmt::format(R"({{"error":"{}"}})", code)};
    }

    Answer route(const Seen& seen) {
        std::lock_guard<std::mutex> lock(mutex_);
        seen_.push_back(seen);
        std::vector<std::string> parts;  // the path split at '/'
        for (size_t pos = 1; pos <= seen.target.size();) {
            size_t end = seen.target.find('/', pos);
            if (end == std::string::npos) end = seen.target.size();
            parts.push_back(seen.target.substr(pos, end - pos));
            pos = end + 1;
        }
        if (parts.size() == 2 && parts[0] == "cdn") return cdn(seen, parts[1]);
        const bool api = parts.size() == 6 && parts[0] == "api" && parts[1] == "models" && parts[4] == "revision";
        const bool resolve = parts.size() == 5 && parts[2] == "resolve";
        if (!api && !resolve) return error_answer(404, "RepoNotFound");
        const std::string id = api ? parts[2] + "/" + parts[3] : parts[0] + "/" + parts[1];
        if (auto moved = renamed_.find(id); moved != renamed_.end()) {
            std::string location = seen.target;
            location.replace(location.find(id), id.size(), moved->second);
            return Answer{307, {{"Location", location}}, ""};
        }
        auto it = repos_.find(id);
        if (it == repos_.end()) return error_answer(404, "RepoNotFound");
        const Repo& repo = it->second;
        if (!repo.token.empty() && seen.authorization != "Bearer " + repo.token) return error_answer(401, "GatedRepo");
        if (api) {
            nlohmann::json siblings = nlohmann::json::array();
            for (const auto& [name, bytes] : repo.files) siblings.push_back({{"rfilename", name}});
            return Answer{200,
                          {{"Content-Type", "application/json"}},
                          nlohmann::json{{"id", id}, {"sha", repo.commit}, {"siblings", siblings}}.dump()};
        }
        auto file = repo.files.find(parts[4]);
        if (parts[3] != repo.commit || file == repo.files.end()) return error_answer(404, "EntryNotFound");
        const std::string etag = etag_of(file->first, file->second);
        if (!is_lfs(file->first))
            return Answer{200, {{"ETag", "\"" + etag + "\""}, {"X-Repo-Commit", repo.commit}}, file->second};
        cdn_[etag] = {file->first, file->second, repo.failing.count(file->first) > 0};
        return Answer{302,
                      {{"Location", fmt::format("{}/cdn/{}", endpoint(), etag)},
                       {"X-Linked-Etag", "\"" + etag + "\""},
                       {"X-Linked-Size", std::to_string(file->second.size())},
                       {"X-Repo-Commit", repo.commit},
                       {"ETag", "\"pointer-" + etag.substr(0, 8) + "\""}},
                      ""};
    }

    Answer cdn(const Seen& seen, const std::string& etag) {
        auto it = cdn_.find(etag);
        if (it == cdn_.end()) return error_answer(404, "EntryNotFound");
        const auto& [name, bytes, failing] = it->second;
        if (seen.method == "HEAD") return error_answer(403, "SignatureDoesNotMatch");  // URLs signed for GET only
        if (failing && seen.method == "GET") return error_answer(500, "InternalError");
        const int64_t size = int64_t(bytes.size());
        int64_t start = 0;
        if (seen.range.rfind("bytes=", 0) == 0) start = std::stoll(seen.range.substr(6));
        if (start >= size && start > 0) return Answer{416, {{"Content-Range", fmt::format("bytes */{}", size)}}, ""};
        Answer answer{start > 0 ? 206 : 200,
                      {{"ETag", "\"" + etag + "\""}, {"Accept-Ranges", "bytes"}},
                      bytes.substr(size_t(start))};
        if (start > 0)
            answer.headers.emplace_back("Content-Range", fmt::format("bytes {}-{}/{}", start, size - 1, size));
        if (seen.method == "GET" && cut_.erase(name)) answer.cut = true;
        return answer;
    }

    struct CdnFile {
        std::string name, bytes;
        bool failing = false;
    };
    boost::asio::io_context ioc_;
    tcp::acceptor acceptor_;
    int port_ = 0;
    std::atomic<bool> stopping_{false};
    std::thread accept_thread_;
    std::vector<std::thread> connections_;  // guarded by mutex_ while accepting
    std::mutex mutex_;
    std::set<int> open_fds_;
    std::map<std::string, Repo> repos_;
    std::map<std::string, std::string> renamed_;
    std::set<std::string> cut_;
    std::map<std::string, CdnFile> cdn_;
    std::vector<Seen> seen_;
};

MockHub::MockHub() : impl_(std::make_unique<Impl>()) {}
MockHub::~MockHub() { stop(); }

std::string MockHub::endpoint() const { return impl_->endpoint(); }

void MockHub::add_repo(const std::string& id, Repo repo) {
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    impl_->repos_[id] = std::move(repo);
}

void MockHub::rename(const std::string& old_id, const std::string& new_id) {
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    impl_->renamed_[old_id] = new_id;
}

void MockHub::cut_first_get(const std::string& file) {
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    impl_->cut_.insert(file);
}

std::vector<MockHub::Seen> MockHub::requests() {
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    return impl_->seen_;
}

bool MockHub::is_lfs(const std::string& name) { return name.ends_with(".safetensors") || name.ends_with(".bin"); }

std::string MockHub::etag_of(const std::string& name, const std::string& bytes) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
    std::string hex;
    for (int i = 0; hex.size() < (is_lfs(name) ? 64u : 40u); ++i) hex += fmt::format("{:016x}", h + uint64_t(i));
    return hex.substr(0, is_lfs(name) ? 64 : 40);
}

void MockHub::stop() { impl_->stop(); }

}  // namespace taco::server::testing
