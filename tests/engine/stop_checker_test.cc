#include "engine/stop_checker.h"

#include <random>

#include <gtest/gtest.h>

namespace taco {
namespace {

struct StreamRun {
    std::vector<std::string> steps;  // text emitted by each push
    std::string text;                // everything emitted, flush included
    bool stopped = false;
    std::string stop_string;
    int64_t stop_index = -1;
};

// Pushes the pieces until a stop; pieces[i] may stop only when i >= first_checked (min_tokens).
StreamRun run(const std::vector<std::string>& stops, bool include, const std::vector<std::string>& pieces,
              size_t first_checked = 0) {
    StopChecker checker(stops, include);
    StreamRun result;
    for (size_t i = 0; i < pieces.size() && !result.stopped; ++i) {
        StopChecker::Step step = checker.push(pieces[i], i >= first_checked);
        result.steps.push_back(step.text);
        result.text += step.text;
        result.stopped = step.stopped;
        result.stop_string = step.stop_string;
        result.stop_index = step.stop_index;
    }
    if (!result.stopped) result.text += checker.flush();
    return result;
}

std::vector<std::string> chars(const std::string& text) {
    std::vector<std::string> out;
    for (char c : text) out.emplace_back(1, c);
    return out;
}

TEST(StopChecker, DetectsAStopStringSpanningPiecesAndHoldsItsPrefixBack) {
    const StreamRun r = run({"STOP"}, false, {"abc S", "TO", "P tail", "more"});
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.stop_string, "STOP");
    EXPECT_EQ(r.steps, (std::vector<std::string>{"abc ", "", ""}));
    EXPECT_EQ(r.text, "abc ");
}

TEST(StopChecker, ReleasesAFalseStartOnceItCannotMatch) {
    const StreamRun r = run({"STOP"}, false, {"abc ST", "AR", "T"});
    EXPECT_FALSE(r.stopped);
    EXPECT_EQ(r.steps, (std::vector<std::string>{"abc ", "STAR", "T"}));
    EXPECT_EQ(r.text,
              "abc STAR"
              "T");
}

TEST(StopChecker, HeldBackSuffixIsReleasedAtFlush) {
    StopChecker checker({"STOP", "\n\n"}, false);
    EXPECT_EQ(checker.push("hello ST").text, "hello ");
    EXPECT_EQ(checker.push("O").text, "");
    EXPECT_EQ(checker.push("\n").text, "STO");  // "\n" may still start "\n\n"
    EXPECT_EQ(checker.flush(), "\n");
    EXPECT_FALSE(checker.stopped());
}

TEST(StopChecker, EarliestCompletingStopStringWinsAcrossPieces) {
    // "lo w" completes before "world" does.
    const StreamRun r = run({"world", "lo w"}, false, chars("hello world"));
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.stop_string, "lo w");
    EXPECT_EQ(r.stop_index, 1);
    EXPECT_EQ(r.text, "hel");
}

TEST(StopChecker, WithinOnePieceListOrderDecidesAsVllm) {
    // vLLM's check_stop_strings tries the stop strings in order and takes the first that occurs.
    EXPECT_EQ(run({"c", "ab"}, false, {"xabcd"}).text, "xab");
    EXPECT_EQ(run({"ab", "c"}, false, {"xabcd"}).text, "x");
    EXPECT_EQ(run({"b"}, false, {"abab"}).text, "a");  // the earliest occurrence of one string
}

TEST(StopChecker, IncludeStopStringKeepsItAndDropsTheRest) {
    const StreamRun r = run({"STOP"}, true, {"abc S", "TOP and", " more"});
    EXPECT_TRUE(r.stopped);
    // Nothing needs holding back: a match never removes text before it.
    EXPECT_EQ(r.steps, (std::vector<std::string>{"abc S", "TOP"}));
    EXPECT_EQ(r.text, "abc STOP");
}

TEST(StopChecker, StopStringAtTheVeryStart) {
    EXPECT_EQ(run({"<end>"}, false, {"<end>", "x"}).text, "");
    EXPECT_TRUE(run({"<end>"}, false, {"<e", "nd>"}).stopped);
    EXPECT_EQ(run({"<end>"}, true, {"<end>tail"}).text, "<end>");
}

TEST(StopChecker, PushesAfterAStopReturnNothing) {
    StopChecker checker({"x"}, false);
    EXPECT_TRUE(checker.push("axb").stopped);
    const StopChecker::Step again = checker.push("more");
    EXPECT_TRUE(again.stopped);
    EXPECT_EQ(again.text, "");
    EXPECT_EQ(checker.flush(), "");
}

TEST(StopChecker, TextBeforeMinTokensCannotStopButCanStartAMatch) {
    // Pieces 0 and 1 are within min_tokens: "STOP" there is ignored, as vLLM does.
    EXPECT_EQ(run({"STOP"}, false, {"STOP", " a", " STOP b"}, 2).text, "STOP a ");
    // A stop string ending in the first checked piece counts even if it began earlier.
    EXPECT_EQ(run({"STOP"}, false, {"a ST", "OP"}, 1).text, "a ");
}

TEST(StopChecker, NeverEmitsAPartialUtf8Character) {
    // "é" is C3 A9, "€" is E2 82 AC; the stop string starts with "é".
    StopChecker checker({"é!"}, false);
    EXPECT_EQ(checker.push("caf\xC3").text, "caf");
    EXPECT_EQ(checker.push("\xA9").text, "");         // "é" could start "é!"
    EXPECT_EQ(checker.push(" \xE2\x82").text, "é ");  // "€" still incomplete
    EXPECT_EQ(checker.push("\xAC").text, "€");
    EXPECT_EQ(checker.push("\xC3\xA9!").text, "");
    EXPECT_TRUE(checker.stopped());
}

TEST(StopChecker, WithoutStopStringsOnlyIncompleteCharactersWait) {
    StopChecker checker({}, false);
    EXPECT_EQ(checker.push("ab\xF0\x9F").text, "ab");
    EXPECT_EQ(checker.push("\x98\x80z").text, "\xF0\x9F\x98\x80z");
    EXPECT_EQ(checker.push("\xE2").text, "");
    EXPECT_EQ(checker.flush(), "\xE2");  // the end of the request releases whatever is left
}

// True when `text` does not end inside a UTF-8 sequence.
bool ends_on_character(const std::string& text) {
    size_t i = text.size();
    while (i > 0 && (static_cast<unsigned char>(text[i - 1]) & 0xC0) == 0x80) --i;
    if (i == 0) return text.empty();
    const auto lead = static_cast<unsigned char>(text[i - 1]);
    const size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    return text.size() - (i - 1) == length;
}

// vLLM's algorithm over code points, run on the whole text after every piece (detokenizer.py).
std::u32string decode(const std::string& s) {
    std::u32string out;
    for (size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        const size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        char32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
        for (size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        out.push_back(c);
        i += n;
    }
    return out;
}

std::u32string vllm_final_text(const std::vector<std::string>& stops, bool include,
                               const std::vector<std::string>& pieces) {
    std::u32string text;
    for (const std::string& piece : pieces) {
        const std::u32string added = decode(piece);
        text += added;
        if (added.empty()) continue;
        for (const std::string& stop_utf8 : stops) {
            const std::u32string stop = decode(stop_utf8);
            const ptrdiff_t from = ptrdiff_t(text.size()) + 1 - ptrdiff_t(added.size()) - ptrdiff_t(stop.size());
            const size_t at = text.find(stop, size_t(std::max<ptrdiff_t>(0, from)));
            if (at == std::u32string::npos) continue;
            return text.substr(0, include ? at + stop.size() : at);
        }
    }
    return text;
}

TEST(StopChecker, MatchesVllmsFinalTextOnRandomStreams) {
    const std::vector<std::string> alphabet = {"a", "b", "c", " ", "é", "€", "😀"};
    std::mt19937 rng(77);
    auto pick = [&](size_t n) { return size_t(rng() % n); };
    for (int trial = 0; trial < 3000; ++trial) {
        std::vector<std::string> stops(1 + pick(3));
        for (std::string& s : stops)
            for (size_t k = 0, len = 1 + pick(4); k < len; ++k) s += alphabet[pick(alphabet.size())];
        std::vector<std::string> pieces(1 + pick(12));
        for (std::string& p : pieces)
            for (size_t k = 0, len = pick(4); k < len; ++k) p += alphabet[pick(alphabet.size())];
        const bool include = pick(2) == 1;

        const StreamRun got = run(stops, include, pieces);
        ASSERT_EQ(decode(got.text), vllm_final_text(stops, include, pieces)) << "trial " << trial;
        for (const std::string& step : got.steps) ASSERT_TRUE(ends_on_character(step)) << "trial " << trial;
    }
}

TEST(StopChecker, PiecesSplitInsideCharactersNeverLeakPartialCharacters) {
    const std::vector<std::string> alphabet = {"a", " ", "é", "€", "😀"};
    std::mt19937 rng(5);
    auto pick = [&](size_t n) { return size_t(rng() % n); };
    for (int trial = 0; trial < 2000; ++trial) {
        std::string whole;
        for (size_t k = 0, len = pick(16); k < len; ++k) whole += alphabet[pick(alphabet.size())];
        std::vector<std::string> pieces;  // cut at random bytes, characters included
        for (size_t at = 0; at < whole.size();) {
            const size_t len = std::min(whole.size() - at, 1 + pick(4));
            pieces.push_back(whole.substr(at, len));
            at += len;
        }
        const std::vector<std::string> stops = {alphabet[pick(alphabet.size())] + alphabet[pick(alphabet.size())]};
        const StreamRun got = run(stops, pick(2) == 1, pieces);
        for (const std::string& step : got.steps) ASSERT_TRUE(ends_on_character(step)) << "trial " << trial;
        ASSERT_EQ(whole.compare(0, got.text.size(), got.text), 0) << "trial " << trial;  // a prefix of the text
        if (!got.stopped) {
            ASSERT_EQ(got.text, whole) << "trial " << trial;
        }
    }
}

}  // namespace
}  // namespace taco
