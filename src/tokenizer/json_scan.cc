#include "tokenizer/json_scan.h"

#include <charconv>
#include <thread>

#include "tokenizer/unicode_utils.h"

namespace taco {
namespace {

class Scanner {
public:
    explicit Scanner(std::string_view text) : s_(text) {}

    size_t pos() const { return pos_; }
    void set_pos(size_t p) { pos_ = p; }
    Status fail(const char* what) const { return error("invalid JSON at byte {}: expected {}", pos_, what); }

    void skip_ws() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
            ++pos_;
    }
    bool peek(char c) {
        skip_ws();
        return pos_ < s_.size() && s_[pos_] == c;
    }
    bool consume(char c) {
        if (!peek(c)) return false;
        ++pos_;
        return true;
    }

    Status read_string(std::string& out) {
        out.clear();
        if (!consume('"')) return fail("a string");
        while (pos_ < s_.size()) {
            size_t run = pos_;
            while (pos_ < s_.size() && s_[pos_] != '"' && s_[pos_] != '\\') ++pos_;
            out.append(s_.substr(run, pos_ - run));
            if (pos_ >= s_.size()) break;
            if (s_[pos_] == '"') {
                ++pos_;
                return Status::ok();
            }
            ++pos_;  // backslash
            if (pos_ >= s_.size()) break;
            char e = s_[pos_++];
            switch (e) {
                case '"': out.push_back('"'); break;
                case '\\': out.push_back('\\'); break;
                case '/': out.push_back('/'); break;
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'n': out.push_back('\n'); break;
                case 'r': out.push_back('\r'); break;
                case 't': out.push_back('\t'); break;
                case 'u': {
                    int32_t cp = 0;
                    TACO_RETURN_IF_ERROR(read_hex4(cp));
                    if (cp >= 0xD800 && cp <= 0xDBFF && pos_ + 1 < s_.size() && s_[pos_] == '\\' &&
                        s_[pos_ + 1] == 'u') {
                        pos_ += 2;
                        int32_t low = 0;
                        TACO_RETURN_IF_ERROR(read_hex4(low));
                        if (low < 0xDC00 || low > 0xDFFF) return fail("a low surrogate");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    } else if (cp >= 0xD800 && cp <= 0xDFFF) {
                        return fail("a valid \\u escape (lone surrogate)");
                    }
                    unicode::append_utf8(out, cp);
                    break;
                }
                default: return fail("a valid escape");
            }
        }
        return fail("a closing quote");
    }

    Status read_int(int32_t& value) {
        skip_ws();
        auto [ptr, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), value);
        if (ec != std::errc()) return fail("an integer");
        pos_ = static_cast<size_t>(ptr - s_.data());
        if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E')) return fail("an integer");
        return Status::ok();
    }

    // Skips one value of any kind (strings and nesting respected; content not validated here: nlohmann does that).
    Status skip_value() {
        skip_ws();
        if (pos_ >= s_.size()) return fail("a value");
        int depth = 0;
        do {
            char c = s_[pos_];
            if (c == '"') {
                ++pos_;
                while (pos_ < s_.size() && s_[pos_] != '"') pos_ += s_[pos_] == '\\' ? 2 : 1;
                if (pos_ >= s_.size()) return fail("a closing quote");
                ++pos_;
            } else if (c == '{' || c == '[') {
                ++depth, ++pos_;
            } else if (c == '}' || c == ']') {
                if (depth == 0) return Status::ok();  // end of the enclosing container
                --depth, ++pos_;
            } else if (depth == 0 && (c == ',')) {
                return Status::ok();
            } else {
                ++pos_;
            }
        } while (depth > 0 && pos_ < s_.size());
        if (depth > 0) return fail("a closing bracket");
        // a scalar: runs to the next delimiter
        while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != '}' && s_[pos_] != ']') ++pos_;
        return Status::ok();
    }

private:
    Status read_hex4(int32_t& cp) {
        if (pos_ + 4 > s_.size()) return fail("4 hex digits");
        cp = 0;
        for (int i = 0; i < 4; ++i) {
            char c = s_[pos_++];
            int v = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (v < 0) return fail("4 hex digits");
            cp = cp * 16 + v;
        }
        return Status::ok();
    }
    std::string_view s_;
    size_t pos_ = 0;
};

// Parses an object of string -> integer; false (position restored) if it is not one.
Result<bool> read_vocab(Scanner& sc, std::vector<std::pair<std::string, int32_t>>& vocab) {
    size_t start = sc.pos();
    if (!sc.consume('{')) return false;
    std::string key;
    if (sc.consume('}')) return true;
    while (true) {
        TACO_RETURN_IF_ERROR(sc.read_string(key));
        if (!sc.consume(':')) return sc.fail("':'");
        sc.skip_ws();
        int32_t id = 0;
        if (!sc.read_int(id).is_ok()) {
            sc.set_pos(start);
            vocab.clear();
            return false;
        }
        vocab.emplace_back(key, id);
        if (sc.consume(',')) continue;
        if (sc.consume('}')) return true;
        return sc.fail("',' or '}' in model.vocab");
    }
}

Status read_merges(Scanner& sc, std::vector<std::pair<std::string, std::string>>& merges) {
    if (!sc.consume('[')) return sc.fail("'[' for model.merges");
    if (sc.consume(']')) return Status::ok();
    std::string a, b;
    while (true) {
        if (sc.peek('[')) {
            sc.consume('[');
            TACO_RETURN_IF_ERROR(sc.read_string(a));
            if (!sc.consume(',')) return sc.fail("',' in a merge pair");
            TACO_RETURN_IF_ERROR(sc.read_string(b));
            if (!sc.consume(']')) return sc.fail("']' closing a merge pair");
            merges.emplace_back(a, b);
        } else {
            TACO_RETURN_IF_ERROR(sc.read_string(a));
            size_t space = a.find(' ');
            if (space == std::string::npos || a.find(' ', space + 1) != std::string::npos) {
                return error("model.merges: '{}' is not two tokens separated by one space", a);
            }
            merges.emplace_back(a.substr(0, space), a.substr(space + 1));
        }
        if (sc.consume(',')) continue;
        if (sc.consume(']')) return Status::ok();
        return sc.fail("',' or ']' in model.merges");
    }
}

}  // namespace

Result<ScannedTokenizerJson> scan_tokenizer_json(std::string_view text) {
    ScannedTokenizerJson out;
    Scanner sc(text);
    std::vector<std::pair<size_t, size_t>> cut;  // spans replaced by an empty container
    std::vector<const char*> fill;
    std::pair<size_t, size_t> vocab_span{0, 0}, merges_span{0, 0};
    std::string key;
    if (!sc.consume('{')) return sc.fail("'{' at the start of the file");
    while (!sc.peek('}')) {
        TACO_RETURN_IF_ERROR(sc.read_string(key));
        if (!sc.consume(':')) return sc.fail("':'");
        sc.skip_ws();
        if (key == "model" && sc.peek('{')) {
            sc.consume('{');
            std::string model_key;
            while (!sc.peek('}')) {
                TACO_RETURN_IF_ERROR(sc.read_string(model_key));
                if (!sc.consume(':')) return sc.fail("':'");
                sc.skip_ws();
                size_t begin = sc.pos();
                TACO_RETURN_IF_ERROR(sc.skip_value());
                if (model_key == "vocab") vocab_span = {begin, sc.pos()};
                if (model_key == "merges") merges_span = {begin, sc.pos()};
                if (!sc.consume(',')) break;
            }
            if (!sc.consume('}')) return sc.fail("'}' closing \"model\"");
        } else {
            TACO_RETURN_IF_ERROR(sc.skip_value());
        }
        if (!sc.consume(',')) break;
    }
    if (!sc.consume('}')) return sc.fail("'}' at the end of the file");

    // The two big values are independent: parse them on two threads.
    Status merges_status;
    std::thread merges_thread;
    if (merges_span.second > merges_span.first) {
        merges_thread = std::thread([&] {
            Scanner m(text);
            m.set_pos(merges_span.first);
            merges_status = read_merges(m, out.merges);
        });
    }
    Status vocab_status;
    bool vocab_ok = false;
    if (vocab_span.second > vocab_span.first) {
        Scanner v(text);
        v.set_pos(vocab_span.first);
        auto ok = read_vocab(v, out.vocab);
        if (ok.is_ok()) {
            vocab_ok = *ok;
        } else {
            vocab_status = ok.status();
        }
    }
    if (merges_thread.joinable()) merges_thread.join();
    TACO_RETURN_IF_ERROR(vocab_status);
    TACO_RETURN_IF_ERROR(merges_status);
    // Spans in file order, replaced by empty containers in `rest`.
    if (vocab_ok) {
        out.has_vocab = true;
        cut.emplace_back(vocab_span);
        fill.push_back("{}");
    }
    if (merges_span.second > merges_span.first) {
        out.has_merges = true;
        cut.emplace_back(merges_span);
        fill.push_back("[]");
    }
    if (cut.size() == 2 && cut[0].first > cut[1].first) {
        std::swap(cut[0], cut[1]);
        std::swap(fill[0], fill[1]);
    }
    size_t prev = 0;
    out.rest.reserve(text.size() - (cut.empty() ? 0 : cut.front().second - cut.front().first));
    for (size_t i = 0; i < cut.size(); ++i) {
        out.rest.append(text.substr(prev, cut[i].first - prev));
        out.rest.append(fill[i]);
        prev = cut[i].second;
    }
    out.rest.append(text.substr(prev));
    return out;
}

}  // namespace taco
