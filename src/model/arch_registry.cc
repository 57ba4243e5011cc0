#include "model/arch_registry.h"

#include <utility>

#include "model/archs/archs.h"

namespace taco {
namespace {

const std::vector<std::pair<std::string, ArchSpecBuilder>>& registry() {
    static const std::vector<std::pair<std::string, ArchSpecBuilder>> table = {
        // One family per line (kept so by hand: merges stay line-wise).
        // clang-format off
        {"LlamaForCausalLM", &archs::llama},
        {"MistralForCausalLM", &archs::mistral},
        {"Qwen2ForCausalLM", &archs::qwen2},
        {"GemmaForCausalLM", &archs::gemma},
        {"Gemma2ForCausalLM", &archs::gemma2},
        {"Gemma3ForCausalLM", &archs::gemma3},
        {"Qwen3ForCausalLM", &archs::qwen3},
        {"Phi3ForCausalLM", &archs::phi3},
        {"StableLmForCausalLM", &archs::stablelm},
        {"Starcoder2ForCausalLM", &archs::starcoder2},
        {"NemotronForCausalLM", &archs::nemotron},
        // GPT-style families
        {"GPT2LMHeadModel", &archs::gpt2},
        {"GPTBigCodeForCausalLM", &archs::gpt_bigcode},
        {"GPTNeoXForCausalLM", &archs::gpt_neox},
        {"GPTJForCausalLM", &archs::gptj},
        {"OPTForCausalLM", &archs::opt},
        {"PhiForCausalLM", &archs::phi},
        {"FalconForCausalLM", &archs::falcon},
        {"BloomForCausalLM", &archs::bloom},
        // MoE
        {"MixtralForCausalLM", &archs::mixtral},
        {"Qwen2MoeForCausalLM", &archs::qwen2_moe},
        {"Qwen3MoeForCausalLM", &archs::qwen3_moe},
        {"PhiMoEForCausalLM", &archs::phimoe},
        {"PhimoeForCausalLM", &archs::phimoe},
        // Remote-code families
        {"InternLMForCausalLM", &archs::internlm},
        {"BaiChuanForCausalLM", &archs::baichuan},
        {"QWenLMHeadModel", &archs::qwen},
        {"XverseForCausalLM", &archs::xverse},
        {"ChatGLMModel", &archs::chatglm},
        {"ChatGLMForConditionalGeneration", &archs::chatglm},
        {"InternLM2ForCausalLM", &archs::internlm2},
        {"BaichuanForCausalLM", &archs::baichuan2},
        // clang-format on
    };
    return table;
}

}  // namespace

std::vector<std::string> supported_architectures() {
    std::vector<std::string> names;
    for (const auto& [name, builder] : registry()) names.push_back(name);
    return names;
}

Result<ArchSpec> arch_spec_for(const ModelConfig& config) {
    for (const auto& [name, builder] : registry()) {
        if (name == config.architecture) return builder(config);
    }
    std::string supported;
    for (const auto& name : supported_architectures()) supported += (supported.empty() ? "" : ", ") + name;
    return error("architecture '{}' is not supported (supported: {})", config.architecture, supported);
}

Result<ops::Activation> activation_from_name(const std::string& hidden_act, const std::string& source) {
    if (hidden_act == "silu" || hidden_act == "swish") return ops::Activation::kSilu;
    if (hidden_act == "gelu_pytorch_tanh" || hidden_act == "gelu_new" || hidden_act == "gelu_fast")
        return ops::Activation::kGeluTanh;
    if (hidden_act == "gelu") return ops::Activation::kGeluErf;
    if (hidden_act == "relu") return ops::Activation::kRelu;
    if (hidden_act == "relu2") return ops::Activation::kRelu2;
    return error("{}: hidden_act '{}' is not supported (silu, gelu, gelu_pytorch_tanh, gelu_new, relu, relu2)", source,
                 hidden_act);
}

}  // namespace taco
