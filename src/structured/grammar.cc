#include "structured/grammar.h"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>

#include "core/check.h"
#include "structured/token_vocab.h"

namespace taco::structured {

int32_t GrammarBuilder::new_state() {
    if (int64_t(grammar_.states.size()) >= kMaxStates) too_large_ = true;
    if (too_large_) return 0;  // the grammar is refused by finish(); what is built from here on is never read
    grammar_.states.emplace_back();
    return int32_t(grammar_.states.size() - 1);
}

int32_t GrammarBuilder::add_rule(std::string name) {
    const auto [it, inserted] = rule_ids_.try_emplace(name, int32_t(grammar_.rules.size()));
    TACO_CHECK_MSG(inserted, "rule '{}' declared twice", name);
    grammar_.rules.push_back({std::move(name), -1});
    return it->second;
}

std::optional<int32_t> GrammarBuilder::find_rule(std::string_view name) const {
    const auto it = rule_ids_.find(std::string(name));
    if (it == rule_ids_.end()) return std::nullopt;
    return it->second;
}

void GrammarBuilder::set_body(int32_t rule, Fragment body) {
    GrammarRule& r = grammar_.rules[size_t(rule)];
    TACO_CHECK_MSG(r.start < 0, "rule '{}' has a body already", r.name);
    r.start = body.start;
    if (!too_large_) grammar_.states[size_t(body.end)].accepting = true;
}

Fragment GrammarBuilder::empty() {
    const int32_t s = new_state();
    return {s, s};
}

Fragment GrammarBuilder::bytes(const ByteSet& set) {
    const int32_t s = new_state(), e = new_state();
    if (!set.empty() && !too_large_) grammar_.states[size_t(s)].byte_edges.push_back({set, e});
    return {s, e};
}

Fragment GrammarBuilder::text_without(std::string_view tag, const std::function<Fragment()>& non_ascii) {
    const size_t k = tag.size();
    TACO_CHECK(k > 0);
    // fail[i]: the longest proper border of tag[0, i).
    std::vector<size_t> fail(k + 1, 0);
    for (size_t i = 1, j = 0; i < k; ++i) {
        while (j > 0 && tag[i] != tag[j]) j = fail[j];
        if (tag[i] == tag[j]) ++j;
        fail[i + 1] = j;
    }
    // State i: the text so far ends with tag[0, i) and holds no tag.
    std::vector<int32_t> states(k);
    for (int32_t& s : states) s = new_state();
    const int32_t end = new_state();
    for (size_t i = 0; i < k && !too_large_; ++i) {
        std::vector<ByteSet> to(k);
        for (int b = 0; b < 128; ++b) {
            size_t j = i;
            while (j > 0 && uint8_t(tag[j]) != b) j = fail[j];
            if (uint8_t(tag[j]) == b) ++j;
            if (j < k) to[j].add(uint8_t(b));  // j == k: the tag, refused
        }
        for (size_t j = 0; j < k; ++j)
            if (!to[j].empty()) grammar_.states[size_t(states[i])].byte_edges.push_back({to[j], states[j]});
        const Fragment other = non_ascii();
        epsilon(states[i], other.start);
        epsilon(other.end, states[0]);
        epsilon(states[i], end);
    }
    return {states[0], end};
}

// One state per byte and one more (not two per byte joined by epsilon edges): an object's keys are most of its states.
Fragment GrammarBuilder::literal(std::string_view text) {
    const int32_t start = new_state();
    int32_t at = start;
    for (char c : text) {
        const int32_t next = new_state();
        if (!too_large_) grammar_.states[size_t(at)].byte_edges.push_back({ByteSet::of(uint8_t(c)), next});
        at = next;
    }
    return {start, at};
}

Fragment GrammarBuilder::tag_literal(std::string_view text) {
    Fragment out = empty();
    size_t plain = 0;  // start of the text not yet added
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '<' && text[i] != '[') continue;
        const char close = text[i] == '<' ? '>' : ']';
        const size_t end = text.find_first_of(" \t\n<[>]", i + 1);
        if (end == std::string_view::npos || text[end] != close || end == i + 1) continue;
        const std::string_view tag = text.substr(i, end + 1 - i);
        out = seq(out, literal(text.substr(plain, i - plain)));
        const std::string marked = std::string(1, kSpecialTokenMark) + std::string(tag) + kSpecialTokenMark;
        out = seq(out, alt({literal(tag), literal(marked)}));
        plain = end + 1;
        i = end;
    }
    return seq(out, literal(text.substr(plain)));
}

Fragment GrammarBuilder::call(int32_t rule) {
    const int32_t s = new_state(), e = new_state();
    if (!too_large_) grammar_.states[size_t(s)].call_edges.push_back({rule, e});
    return {s, e};
}

Fragment GrammarBuilder::seq(Fragment a, Fragment b) {
    epsilon(a.end, b.start);
    return {a.start, b.end};
}

Fragment GrammarBuilder::alt(const std::vector<Fragment>& choices) {
    const int32_t s = new_state(), e = new_state();
    for (const Fragment& f : choices) {
        epsilon(s, f.start);
        epsilon(f.end, e);
    }
    return {s, e};
}

Fragment GrammarBuilder::star(Fragment f) {
    const int32_t s = new_state(), e = new_state();
    epsilon(s, f.start);
    epsilon(f.end, s);
    epsilon(s, e);
    return {s, e};
}

Fragment GrammarBuilder::plus(Fragment f) {
    const int32_t e = new_state();
    epsilon(f.end, f.start);
    epsilon(f.end, e);
    return {f.start, e};
}

Fragment GrammarBuilder::optional(Fragment f) {
    epsilon(f.start, f.end);
    return f;
}

// The states of a fragment are exactly those reachable from its start (its end has no edges yet, and the
// construction never links into a fragment from outside but at its start).
Fragment GrammarBuilder::clone(Fragment f) {
    std::vector<int32_t> order = {f.start};
    std::vector<int32_t> copy_of(grammar_.states.size(), -1);
    copy_of[size_t(f.start)] = new_state();
    for (size_t i = 0; i < order.size() && !too_large_; ++i) {
        const int32_t s = order[i];
        auto visit = [&](int32_t t) {
            if (copy_of[size_t(t)] < 0) {
                copy_of[size_t(t)] = new_state();
                order.push_back(t);
            }
            return copy_of[size_t(t)];
        };
        // Copied out first: new_state() may reallocate the state vector.
        const GrammarState original = grammar_.states[size_t(s)];
        GrammarState copy;
        copy.accepting = original.accepting;
        for (const ByteEdge& e : original.byte_edges) copy.byte_edges.push_back({e.bytes, visit(e.target)});
        for (const CallEdge& e : original.call_edges) copy.call_edges.push_back({e.rule, visit(e.target)});
        for (int32_t t : original.epsilon_edges) copy.epsilon_edges.push_back(visit(t));
        grammar_.states[size_t(copy_of[size_t(s)])] = std::move(copy);
    }
    if (too_large_) return empty();
    TACO_CHECK_MSG(copy_of[size_t(f.end)] >= 0, "fragment end not reachable from its start");
    return {copy_of[size_t(f.start)], copy_of[size_t(f.end)]};
}

Result<Fragment> GrammarBuilder::repeat(Fragment f, int64_t min, std::optional<int64_t> max) {
    if (min < 0 || (max && *max < min)) return error("repetition {{{},{}}} has max below min", min, max.value_or(-1));
    const int64_t copies = max ? *max : min + 1;
    if (copies * int64_t(grammar_.states.size() - size_t(f.start)) > kMaxStates || copies > kMaxStates)
        return error("repetition count {} makes the grammar too large", copies);
    std::vector<Fragment> parts;
    for (int64_t i = 1; i < copies; ++i) parts.push_back(clone(f));
    parts.push_back(f);
    if (too_large_) return error("the grammar grows past {} states", kMaxStates);
    Fragment out = empty();
    for (int64_t i = 0; i < min; ++i) out = seq(out, parts[size_t(i)]);
    if (!max) return seq(out, star(parts[size_t(min)]));
    // Optional copies nest, so "a{0,3}" stops after any copy: (a(a(a)?)?)?.
    Fragment tail = empty();
    for (int64_t i = *max - 1; i >= min; --i) tail = optional(seq(parts[size_t(i)], tail));
    return seq(out, tail);
}

Result<Fragment> GrammarBuilder::json_chars_bounded(Fragment f, int64_t min, std::optional<int64_t> max) {
    if (min < 0 || (max && *max < min)) return error("length bounds {}..{} are empty", min, max.value_or(-1));
    // Where a node is in the character being read: 0 at a boundary, 1 after '\', 1 + k with k hex digits of \uXXXX
    // left (k = 1..4), 5 + k with k UTF-8 continuation bytes left (k = 1..3).
    constexpr int kEscape = 1, kHex = 1, kUtf8 = 5;
    const int64_t cap = max ? *max : min;  // counts past `cap` without a max are all alike
    struct Node {
        int32_t state;
        int64_t count;
        int phase;
        std::vector<std::pair<ByteSet, int32_t>> byte_edges;  // to node ids
        std::vector<int32_t> epsilon_edges;
    };
    std::vector<Node> nodes;
    std::map<std::tuple<int32_t, int64_t, int>, int32_t> id_of;
    bool too_large = false;
    auto node = [&](int32_t state, int64_t count, int phase) {
        const auto [it, inserted] = id_of.try_emplace({state, count, phase}, int32_t(nodes.size()));
        if (inserted) {
            if (int64_t(nodes.size()) + int64_t(grammar_.states.size()) >= kMaxStates) too_large = true;
            nodes.push_back({state, count, phase, {}, {}});
        }
        return it->second;
    };
    // The byte classes that move a node at `phase` alike: (bytes, characters started, next phase).
    auto classes = [&](int phase) {
        std::vector<std::tuple<ByteSet, int, int>> out;
        ByteSet all = ByteSet::range(0, 255);
        if (phase == 0) {
            ByteSet rest = ByteSet::range(0, 0x7f);
            rest.words[1] &= ~(uint64_t(1) << ('\\' - 64));
            rest |= ByteSet::range(0x80, 0xbf);  // a stray continuation byte: never written by f, counted alike
            rest |= ByteSet::range(0xf8, 0xff);
            out.push_back({ByteSet::of('\\'), 1, kEscape});
            out.push_back({ByteSet::range(0xc0, 0xdf), 1, kUtf8 + 1});
            out.push_back({ByteSet::range(0xe0, 0xef), 1, kUtf8 + 2});
            out.push_back({ByteSet::range(0xf0, 0xf7), 1, kUtf8 + 3});
            out.push_back({rest, 1, 0});
        } else if (phase == kEscape) {
            ByteSet rest = all;
            rest.words[1] &= ~(uint64_t(1) << ('u' - 64));
            out.push_back({ByteSet::of('u'), 0, kHex + 4});
            out.push_back({rest, 0, 0});
        } else if (phase > kHex && phase <= kHex + 4) {
            out.push_back({all, 0, phase == kHex + 1 ? 0 : phase - 1});
        } else {
            out.push_back({all, 0, phase == kUtf8 + 1 ? 0 : phase - 1});
        }
        return out;
    };
    node(f.start, 0, 0);
    for (size_t i = 0; i < nodes.size() && !too_large; ++i) {
        const GrammarState& s = grammar_.states[size_t(nodes[i].state)];
        if (!s.call_edges.empty()) return error("a length bound over a text that calls a rule");
        const int64_t count = nodes[i].count;
        const int phase = nodes[i].phase;
        for (int32_t t : s.epsilon_edges) {
            const int32_t to = node(t, count, phase);
            nodes[i].epsilon_edges.push_back(to);
        }
        for (const ByteEdge& e : s.byte_edges)
            for (const auto& [set, started, next] : classes(phase)) {
                ByteSet bytes = e.bytes;
                for (int w = 0; w < 4; ++w) bytes.words[size_t(w)] &= set.words[size_t(w)];
                if (bytes.empty() || (max && count + started > *max)) continue;
                const int32_t to = node(e.target, std::min(count + started, cap), next);
                nodes[i].byte_edges.push_back({bytes, to});
            }
    }
    if (too_large) return error("a length bound makes the grammar grow past {} states", kMaxStates);
    // Keep the nodes from which a final one (f's end, a whole character, enough of them) can be reached.
    std::vector<std::vector<int32_t>> into(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
        for (const auto& e : nodes[i].byte_edges) into[size_t(e.second)].push_back(int32_t(i));
        for (int32_t t : nodes[i].epsilon_edges) into[size_t(t)].push_back(int32_t(i));
    }
    auto is_final = [&](const Node& n) { return n.state == f.end && n.phase == 0 && n.count >= min; };
    std::vector<bool> live(nodes.size(), false);
    std::vector<int32_t> todo;
    for (size_t i = 0; i < nodes.size(); ++i)
        if (is_final(nodes[i])) {
            live[i] = true;
            todo.push_back(int32_t(i));
        }
    while (!todo.empty()) {
        const int32_t n = todo.back();
        todo.pop_back();
        for (int32_t from : into[size_t(n)])
            if (!live[size_t(from)]) {
                live[size_t(from)] = true;
                todo.push_back(from);
            }
    }
    std::vector<int32_t> state_of(nodes.size(), -1);
    for (size_t i = 0; i < nodes.size(); ++i)
        if (live[i] || i == 0) state_of[i] = new_state();
    const int32_t end = new_state();
    if (too_large_) return error("the grammar grows past {} states", kMaxStates);
    for (size_t i = 0; i < nodes.size(); ++i) {
        if (state_of[i] < 0) continue;
        GrammarState& s = grammar_.states[size_t(state_of[i])];
        for (const auto& [bytes, to] : nodes[i].byte_edges)
            if (live[size_t(to)]) s.byte_edges.push_back({bytes, state_of[size_t(to)]});
        for (int32_t to : nodes[i].epsilon_edges)
            if (live[size_t(to)]) s.epsilon_edges.push_back(state_of[size_t(to)]);
        if (live[i] && is_final(nodes[i])) s.epsilon_edges.push_back(end);
    }
    return Fragment{state_of[0], end};
}

namespace {

// The rules that can reach one of their accepting states from their start, passing a call edge only once its rule is
// known to: with `follow_bytes` the rules that match some string (a call counts once its rule can), without it the
// rules that match the empty string. An incremental least fixed point: a walk blocked at a call resumes there when
// the called rule is found, so each state is visited once (chains of thousands of rules, as a long object's members,
// cost their size rather than its square). Relies on every state belonging to one rule.
std::vector<bool> rules_reaching_accept(const Grammar& g, bool follow_bytes) {
    std::vector<bool> found(g.rules.size(), false), seen(g.states.size(), false);
    std::vector<std::vector<std::pair<int32_t, int32_t>>> waiting(g.rules.size());  // callee -> (caller, return state)
    std::vector<int32_t> newly_found, todo;
    auto walk = [&](int32_t rule, int32_t from) {
        if (seen[size_t(from)]) return;
        seen[size_t(from)] = true;
        todo.assign(1, from);
        while (!todo.empty()) {
            const GrammarState& s = g.states[size_t(todo.back())];
            todo.pop_back();
            if (s.accepting && !found[size_t(rule)]) {
                found[size_t(rule)] = true;
                newly_found.push_back(rule);
            }
            auto go = [&](int32_t t) {
                if (!seen[size_t(t)]) {
                    seen[size_t(t)] = true;
                    todo.push_back(t);
                }
            };
            if (follow_bytes)
                for (const ByteEdge& e : s.byte_edges) go(e.target);
            for (const CallEdge& e : s.call_edges) {
                if (found[size_t(e.rule)])
                    go(e.target);
                else
                    waiting[size_t(e.rule)].push_back({rule, e.target});
            }
        }
    };
    for (size_t r = 0; r < g.rules.size(); ++r) walk(int32_t(r), g.rules[r].start);
    while (!newly_found.empty()) {
        const int32_t callee = newly_found.back();
        newly_found.pop_back();
        const std::vector<std::pair<int32_t, int32_t>> resume = std::move(waiting[size_t(callee)]);
        for (const auto& [caller, state] : resume) walk(caller, state);
    }
    return found;
}

// A rule that can call itself before matching a byte would make the matcher's closure infinite.
Status check_left_recursion(const Grammar& g) {
    const std::vector<bool> nullable = rules_reaching_accept(g, false);
    // left_calls[r]: rules r may enter before consuming any byte (states belong to one rule, so one `seen` serves).
    std::vector<std::vector<int32_t>> left_calls(g.rules.size());
    std::vector<bool> seen(g.states.size(), false);
    for (size_t r = 0; r < g.rules.size(); ++r) {
        std::vector<int32_t> todo = {g.rules[r].start};
        seen[size_t(todo[0])] = true;
        while (!todo.empty()) {
            const GrammarState& s = g.states[size_t(todo.back())];
            todo.pop_back();
            for (const CallEdge& e : s.call_edges) {
                left_calls[r].push_back(e.rule);
                if (nullable[size_t(e.rule)] && !seen[size_t(e.target)]) {
                    seen[size_t(e.target)] = true;
                    todo.push_back(e.target);
                }
            }
        }
    }
    // Depth-first search for a cycle, with an explicit stack (left-call chains may be thousands of rules long):
    // 0 unvisited, 1 on the path, 2 done.
    std::vector<int> mark(g.rules.size(), 0);
    std::vector<std::pair<int32_t, size_t>> path;  // (rule, index of its next left call)
    for (size_t root = 0; root < g.rules.size(); ++root) {
        if (mark[root] != 0) continue;
        mark[root] = 1;
        path.assign(1, {int32_t(root), 0});
        while (!path.empty()) {
            auto& [r, next] = path.back();
            if (next == left_calls[size_t(r)].size()) {
                mark[size_t(r)] = 2;
                path.pop_back();
                continue;
            }
            const int32_t callee = left_calls[size_t(r)][next++];
            if (mark[size_t(callee)] == 1)
                return error(
                    "grammar rule '{}' is left-recursive (it can reach itself before matching anything); "
                    "rewrite it with repetition, e.g. list ::= item (\",\" item)*",
                    g.rules[size_t(callee)].name);
            if (mark[size_t(callee)] == 0) {
                mark[size_t(callee)] = 1;
                path.push_back({callee, 0});
            }
        }
    }
    return Status::ok();
}

}  // namespace

Result<Grammar> GrammarBuilder::finish(int32_t root) {
    if (too_large_) return error("the grammar grows past {} states", kMaxStates);
    Grammar& g = grammar_;
    g.root_rule = root;
    // Rules reachable from the root must have bodies (others are dropped with their states).
    std::vector<bool> used(g.rules.size(), false);
    std::vector<int32_t> todo_rules = {root};
    used[size_t(root)] = true;
    std::vector<bool> seen(g.states.size(), false);  // states belong to one rule, so one `seen` serves all
    while (!todo_rules.empty()) {
        const int32_t r = todo_rules.back();
        todo_rules.pop_back();
        if (g.rules[size_t(r)].start < 0)
            return error("grammar rule '{}' is used but not defined", g.rules[size_t(r)].name);
        std::vector<int32_t> todo = {g.rules[size_t(r)].start};
        seen[size_t(todo[0])] = true;
        while (!todo.empty()) {
            const GrammarState& s = g.states[size_t(todo.back())];
            todo.pop_back();
            auto go = [&](int32_t t) {
                if (!seen[size_t(t)]) {
                    seen[size_t(t)] = true;
                    todo.push_back(t);
                }
            };
            for (const ByteEdge& e : s.byte_edges) go(e.target);
            for (int32_t t : s.epsilon_edges) go(t);
            for (const CallEdge& e : s.call_edges) {
                go(e.target);
                if (!used[size_t(e.rule)]) {
                    used[size_t(e.rule)] = true;
                    todo_rules.push_back(e.rule);
                }
            }
        }
    }

    // Epsilon removal: a state takes the edges and the accepting flag of every state its epsilon edges reach. Edges
    // to one target merge; the target's slot in `out` is looked up, not searched (an alt of 100k choices).
    std::vector<GrammarState> closed(g.states.size());
    std::vector<uint32_t> stamp(g.states.size(), 0), byte_stamp(g.states.size(), 0), call_stamp(g.states.size(), 0);
    std::vector<uint32_t> byte_slot(g.states.size()), call_slot(g.states.size());
    for (size_t s = 0; s < g.states.size(); ++s) {
        const uint32_t epoch = uint32_t(s + 1);
        std::vector<int32_t> todo = {int32_t(s)};
        stamp[s] = epoch;
        GrammarState& out = closed[s];
        while (!todo.empty()) {
            const GrammarState& t = g.states[size_t(todo.back())];
            todo.pop_back();
            out.accepting = out.accepting || t.accepting;
            for (const ByteEdge& e : t.byte_edges) {
                const size_t target = size_t(e.target);
                if (byte_stamp[target] == epoch) {
                    out.byte_edges[byte_slot[target]].bytes |= e.bytes;
                } else {
                    byte_stamp[target] = epoch;
                    byte_slot[target] = uint32_t(out.byte_edges.size());
                    out.byte_edges.push_back(e);
                }
            }
            for (const CallEdge& e : t.call_edges) {
                const size_t target = size_t(e.target);
                if (call_stamp[target] == epoch && out.call_edges[call_slot[target]].rule == e.rule) continue;
                call_stamp[target] = epoch;
                call_slot[target] = uint32_t(out.call_edges.size());
                out.call_edges.push_back(e);
            }
            for (int32_t next : t.epsilon_edges)
                if (stamp[size_t(next)] != epoch) {
                    stamp[size_t(next)] = epoch;
                    todo.push_back(next);
                }
        }
    }

    // Keep the states reachable by bytes or calls from the starts of used rules, renumbered in visiting order.
    std::vector<int32_t> new_id(g.states.size(), -1);
    std::vector<int32_t> order;
    auto keep = [&](int32_t s) {
        if (new_id[size_t(s)] < 0) {
            new_id[size_t(s)] = int32_t(order.size());
            order.push_back(s);
        }
    };
    for (size_t r = 0; r < g.rules.size(); ++r)
        if (used[r]) keep(g.rules[r].start);
    for (size_t i = 0; i < order.size(); ++i) {
        for (const ByteEdge& e : closed[size_t(order[i])].byte_edges) keep(e.target);
        for (const CallEdge& e : closed[size_t(order[i])].call_edges) keep(e.target);
    }
    std::vector<GrammarState> states(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
        GrammarState& out = states[i];
        out = std::move(closed[size_t(order[i])]);
        for (ByteEdge& e : out.byte_edges) e.target = new_id[size_t(e.target)];
        for (CallEdge& e : out.call_edges) e.target = new_id[size_t(e.target)];
    }
    g.states = std::move(states);
    for (size_t r = 0; r < g.rules.size(); ++r) g.rules[r].start = used[r] ? new_id[size_t(g.rules[r].start)] : -1;
    // Unused rules keep their index (call edges name rules by index) but no states; give them a dead state so the
    // analyses below can treat every rule alike.
    for (size_t r = 0; r < g.rules.size(); ++r)
        if (g.rules[r].start < 0) {
            g.states.emplace_back();
            g.rules[r].start = int32_t(g.states.size() - 1);
        }

    TACO_RETURN_IF_ERROR(check_left_recursion(g));
    if (!rules_reaching_accept(g, true)[size_t(root)]) return error("the grammar matches no string at all");
    return std::move(grammar_);
}

}  // namespace taco::structured
