// Every template of tests/data/jinja/conformance.jsonl renders byte-identically to transformers' environment
// (conformance_golden.jsonl, made by tools/make_chat_goldens.py), or fails where it raised.
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "jinja_test_util.h"
#include "tokenizer/jinja/template.h"

namespace taco::jinja {
namespace {

Result<std::string> render_case(const nlohmann::ordered_json& test_case) {
    TACO_ASSIGN_OR_RETURN(Template tmpl, Template::parse(test_case["template"].get<std::string>()));
    std::vector<std::pair<std::string, Value>> context;
    for (const auto& [key, value] : test_case["context"].items()) context.emplace_back(key, Value::from_json(value));
    RenderOptions options;
    options.now_epoch_seconds = testing::kGoldenEpochSeconds;
    return tmpl.render(context, options);
}

TEST(JinjaConformance, MatchesTransformersEnvironmentOnEveryCase) {
    testing::use_utc_time_zone();
    auto cases = testing::read_jsonl(testing::data_path("jinja/conformance.jsonl"));
    auto goldens = testing::read_jsonl(testing::data_path("jinja/conformance_golden.jsonl"));
    ASSERT_GE(cases.size(), 100u);
    std::map<std::string, nlohmann::ordered_json> golden_by_name;
    for (const auto& g : goldens) golden_by_name[g["name"].get<std::string>()] = g;
    int passed = 0;
    for (const auto& test_case : cases) {
        const std::string name = test_case["name"].get<std::string>();
        SCOPED_TRACE("case " + name + ": " + test_case["template"].get<std::string>());
        auto it = golden_by_name.find(name);
        ASSERT_NE(it, golden_by_name.end()) << "no golden for " << name;
        const auto& golden = it->second;
        auto rendered = render_case(test_case);
        if (golden.contains("error")) {
            EXPECT_FALSE(rendered.is_ok()) << "transformers raised " << golden["error"] << " but we rendered '"
                                           << (rendered.is_ok() ? *rendered : "") << "'";
            if (!rendered.is_ok()) ++passed;
            continue;
        }
        if (!rendered.is_ok()) {
            ADD_FAILURE() << "unexpected error: " << rendered.status().message();
            continue;
        }
        EXPECT_EQ(*rendered, golden["output"].get<std::string>());
        if (*rendered == golden["output"].get<std::string>()) ++passed;
    }
    std::printf("jinja conformance: %d / %zu cases identical\n", passed, cases.size());
}

}  // namespace
}  // namespace taco::jinja
