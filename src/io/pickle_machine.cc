#include "io/pickle_machine.h"

namespace taco::pickle_internal {

const char* kind_name(Kind kind) {
    switch (kind) {
        case Kind::kNone: return "None";
        case Kind::kBool: return "bool";
        case Kind::kInt: return "int";
        case Kind::kFloat: return "float";
        case Kind::kString: return "str";
        case Kind::kTuple: return "tuple";
        case Kind::kList: return "list";
        case Kind::kDict: return "dict";
        case Kind::kGlobal: return "global";
        case Kind::kStorage: return "storage";
        case Kind::kTensor: return "tensor";
    }
    return "?";
}

Status PickleMachine::execute() {
    while (!result_) {
        op_pos_ = pos_;
        if (pos_ >= bytes_.size()) return error("truncated: no STOP opcode");
        TACO_RETURN_IF_ERROR(step(bytes_[pos_++]));
    }
    return Status::ok();
}

Status PickleMachine::step(uint8_t op) {
    switch (op) {
        case 0x80: {  // PROTO
            TACO_ASSIGN_OR_RETURN(uint64_t proto, read_le(1));
            if (proto < 2 || proto > 5) return error("pickle protocol {} is not supported (2 to 5 are)", proto);
            return Status::ok();
        }
        case 0x95:  // FRAME: a length prefix for buffering; the frame's opcodes follow inline
            return read_le(8).status();
        case '}': return push(make_value(Kind::kDict));
        case ']': return push(make_value(Kind::kList));
        case ')': return push(make_value(Kind::kTuple));
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
            size_t n = size_t(op - 0x84);
            if (stack_.size() - floor() < n) return error("stack underflow");
            std::vector<uint32_t> items(stack_.end() - std::ptrdiff_t(n), stack_.end());
            stack_.resize(stack_.size() - n);
            return push(make_tuple(std::move(items)));
        }
        case 't': {
            TACO_ASSIGN_OR_RETURN(std::vector<uint32_t> items, pop_to_mark());
            return push(make_tuple(std::move(items)));
        }
        case '(': marks_.push_back(stack_.size()); return Status::ok();
        case 'X':
        case 0x8c:
        case 0x8d: {  // BINUNICODE (4-byte length), SHORT_BINUNICODE (1), BINUNICODE8 (8)
            TACO_ASSIGN_OR_RETURN(uint64_t len, read_le(op == 'X' ? 4 : op == 0x8c ? 1 : 8));
            TACO_ASSIGN_OR_RETURN(std::string text, read_bytes(len));
            return push(make_string(std::move(text)));
        }
        case 'J': {
            TACO_ASSIGN_OR_RETURN(uint64_t v, read_le(4));
            return push(make_value(Kind::kInt, int32_t(uint32_t(v))));
        }
        case 'K':
        case 'M': {  // BININT1, BININT2: unsigned
            TACO_ASSIGN_OR_RETURN(uint64_t v, read_le(op == 'K' ? 1 : 2));
            return push(make_value(Kind::kInt, int64_t(v)));
        }
        case 0x8a: {  // LONG1: n-byte two's complement, little-endian
            TACO_ASSIGN_OR_RETURN(uint64_t n, read_le(1));
            if (n > 8) return error("LONG1 of {} bytes does not fit in 64 bits", n);
            TACO_ASSIGN_OR_RETURN(uint64_t v, read_le(size_t(n)));
            if (n > 0 && n < 8 && (v >> (8 * n - 1)) != 0) v |= ~uint64_t(0) << (8 * n);  // sign-extend
            return push(make_value(Kind::kInt, int64_t(v)));
        }
        case 0x88: return push(make_value(Kind::kBool, 1));
        case 0x89: return push(make_value(Kind::kBool, 0));
        case 'N': return push(make_value(Kind::kNone));
        case 'G': {  // BINFLOAT, big-endian; kept only so that such values can sit in ignored metadata
            TACO_RETURN_IF_ERROR(read_le(8).status());
            return push(make_value(Kind::kFloat));
        }
        case 'q': {
            TACO_ASSIGN_OR_RETURN(uint64_t index, read_le(1));
            return memo_put(index);
        }
        case 'r': {
            TACO_ASSIGN_OR_RETURN(uint64_t index, read_le(4));
            return memo_put(index);
        }
        case 0x94: return memo_put(memo_.size());  // MEMOIZE
        case 'h': {
            TACO_ASSIGN_OR_RETURN(uint64_t index, read_le(1));
            return memo_get(index);
        }
        case 'j': {
            TACO_ASSIGN_OR_RETURN(uint64_t index, read_le(4));
            return memo_get(index);
        }
        case 's': {  // SETITEM
            TACO_ASSIGN_OR_RETURN(uint32_t value, pop());
            TACO_ASSIGN_OR_RETURN(uint32_t key, pop());
            TACO_ASSIGN_OR_RETURN(uint32_t dict, top());
            if (values_[dict].kind != Kind::kDict) return error("SETITEM on a {}", kind_name(values_[dict].kind));
            values_[dict].items.insert(values_[dict].items.end(), {key, value});
            return Status::ok();
        }
        case 'u': {  // SETITEMS
            TACO_ASSIGN_OR_RETURN(std::vector<uint32_t> items, pop_to_mark());
            TACO_ASSIGN_OR_RETURN(uint32_t dict, top());
            if (values_[dict].kind != Kind::kDict) return error("SETITEMS on a {}", kind_name(values_[dict].kind));
            if (items.size() % 2 != 0)
                return error("SETITEMS with an odd number ({}) of keys and values", items.size());
            values_[dict].items.insert(values_[dict].items.end(), items.begin(), items.end());
            return Status::ok();
        }
        case 'a':
        case 'e': {  // APPEND, APPENDS
            std::vector<uint32_t> items;
            if (op == 'a') {
                TACO_ASSIGN_OR_RETURN(uint32_t item, pop());
                items.push_back(item);
            } else {
                TACO_ASSIGN_OR_RETURN(items, pop_to_mark());
            }
            TACO_ASSIGN_OR_RETURN(uint32_t list, top());
            if (values_[list].kind != Kind::kList) return error("APPEND on a {}", kind_name(values_[list].kind));
            values_[list].items.insert(values_[list].items.end(), items.begin(), items.end());
            return Status::ok();
        }
        case 'c': {  // GLOBAL "module\nname\n"
            TACO_ASSIGN_OR_RETURN(std::string module, read_line());
            TACO_ASSIGN_OR_RETURN(std::string name, read_line());
            return global(module, name);
        }
        case 0x93: {  // STACK_GLOBAL
            TACO_ASSIGN_OR_RETURN(uint32_t name, pop_kind(Kind::kString, "STACK_GLOBAL name"));
            TACO_ASSIGN_OR_RETURN(uint32_t module, pop_kind(Kind::kString, "STACK_GLOBAL module"));
            return global(values_[module].text, values_[name].text);
        }
        case 'R': return reduce();
        case 'Q': return persistent_id();
        case 'b': {  // BUILD: an OrderedDict's state is its attributes (state_dict()._metadata), not tensors
            TACO_RETURN_IF_ERROR(pop().status());
            TACO_ASSIGN_OR_RETURN(uint32_t target, top());
            if (values_[target].kind != Kind::kDict) return error("BUILD on a {}", kind_name(values_[target].kind));
            return Status::ok();
        }
        case '.': {
            TACO_ASSIGN_OR_RETURN(uint32_t id, pop());
            result_ = id;
            return Status::ok();
        }
        default: break;
    }
    if (op >= 0x20 && op < 0x7f) return error("unsupported pickle opcode 0x{:02x} ('{}')", op, char(op));
    return error("unsupported pickle opcode 0x{:02x}", op);
}

}  // namespace taco::pickle_internal
