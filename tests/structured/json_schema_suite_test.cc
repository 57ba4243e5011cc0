// The schema suite of tests/structured/data/json_schema_suite.json (also served end to end by
// tests/server/json_schema_suite_test.mjs and checked there with ajv): every schema compiles, every text sampled
// under its masks validates against it, and every "rejected" schema is an error naming its keyword.
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "json_schema_validator.h"
#include "structured/json_schema_grammar.h"
#include "structured_test_util.h"

namespace taco::structured {
namespace {

using ojson = nlohmann::ordered_json;

ojson load_suite() {
    std::ifstream in(std::string(TACO_SOURCE_DIR) + "/tests/structured/data/json_schema_suite.json");
    std::stringstream text;
    text << in.rdbuf();
    return ojson::parse(text.str());
}

TEST(JsonSchemaSuite, EverySchemaCompilesAndItsRandomWalksValidate) {
    const ojson suite = load_suite();
    ASSERT_GE(suite.at("schemas").size(), 100u);
    auto vocab = testing::json_vocab();
    std::mt19937 rng(77);
    for (const ojson& entry : suite.at("schemas")) {
        const std::string name = entry.at("name").get<std::string>();
        const ojson& schema = entry.at("schema");
        auto g = json_schema_grammar(schema);
        ASSERT_TRUE(g.is_ok()) << name << ": " << g.status().message();
        auto compiled = std::make_shared<const CompiledGrammar>(std::move(*g), vocab);
        for (int walk = 0; walk < 8; ++walk) {
            auto out = testing::random_walk(compiled, rng, 3000);
            if (!out) continue;
            ojson value;
            try {
                value = ojson::parse(*out);
            } catch (const nlohmann::json::out_of_range&) {
                continue;  // an unbounded number past double's range ("5E417"): valid JSON, not a double here
            } catch (const nlohmann::json::exception& e) {
                ADD_FAILURE() << name << ": " << e.what() << "\n" << *out;
                continue;
            }
            EXPECT_EQ(testing::validate_json(value, schema, schema), "") << name << "\n" << *out;
        }
    }
}

TEST(JsonSchemaSuite, RejectedSchemasAreErrorsNamingTheirKeyword) {
    const ojson suite = load_suite();  // a range-for over load_suite().at(...) would walk a destroyed temporary
    for (const ojson& entry : suite.at("rejected")) {
        const std::string keyword = entry.at("keyword").get<std::string>();
        auto g = json_schema_grammar(entry.at("schema"));
        ASSERT_FALSE(g.is_ok()) << keyword;
        EXPECT_NE(g.status().message().find(keyword), std::string::npos) << keyword << ": " << g.status().message();
    }
}

}  // namespace
}  // namespace taco::structured
