// Bounded JSON parsing (parse_json_limited): a key given twice in one object is refused with the
// lines of both, at any depth; strings that only look like keys, and escaped quotes, do not
// confuse the line count.
#include <gtest/gtest.h>

#include <string>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"

using namespace ckpt;

namespace {

// The message of the ConfigError parse_json_limited throws for `text` ("" when it parses).
std::string error_of(const std::string& text) {
  try {
    parse_json_limited(text, "config file 'x.json'");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(JsonRead, DuplicatedTopLevelKeyNamesBothLines) {
  const std::string m = error_of(
      "{\n"
      "  \"model\": \"tiny\",\n"
      "  \"layout\": \"shared-file\",\n"
      "  \"layout\": \"file-per-shard\"\n"
      "}\n");
  EXPECT_EQ(m,
            "config file 'x.json': the key \"layout\" appears twice in one object (lines 3 and "
            "4); give each key once");
}

TEST(JsonRead, DuplicatedNestedKeyNamesItsPathAndBothLines) {
  const std::string m = error_of(
      "{\"model\": \"tiny\",\n"
      " \"parallelism\": {\n"
      "   \"tp\": 2,\n"
      "   \"pp\": 1,\n"
      "   \"tp\": 4}}\n");
  EXPECT_EQ(m,
            "config file 'x.json': the key \"tp\" appears twice in one object ('parallelism.tp', "
            "lines 3 and 5); give each key once");
  // Inside an array, and the same key in two different objects is no duplicate.
  const std::string a = error_of(
      "{\"sweep\": {\"x\": [1]},\n"
      " \"exclude\": [{\"layout\": 1},\n"
      "   {\"layout\": 2,\n"
      "    \"layout\": 3}]}");
  EXPECT_EQ(a,
            "config file 'x.json': the key \"layout\" appears twice in one object "
            "('exclude[1].layout', lines 3 and 4); give each key once");
  EXPECT_EQ(error_of(R"({"a": {"k": 1}, "b": {"k": 2}, "k": [{"k": 1}, {"k": 2}]})"), "");
  // The empty key is a key too.
  EXPECT_EQ(error_of("{\"\": 1,\n \"\": 2}"),
            "config file 'x.json': the key \"\" appears twice in one object (lines 1 and 2); give "
            "each key once");
  // Both on one line.
  EXPECT_EQ(error_of(R"({"m": {"tp": 1, "pp": 1, "tp": 2}})"),
            "config file 'x.json': the key \"tp\" appears twice in one object ('m.tp', both on "
            "line 1); give each key once");
}

TEST(JsonRead, KeyLikeStringsAndEscapedQuotesDoNotShiftTheLines) {
  // A string value followed by ':' inside another string, a value that holds `"x":`, and keys
  // with escaped quotes and backslashes: only real keys are counted.
  const std::string m = error_of(
      "{\"comment\": \"looks like \\\"a\\\": a key\",\n"
      " \"b\\\\\": \"x\",\n"
      " \"q\\\"\": {\"inner\": \"\\\"tp\\\": 3\"},\n"
      " \"list\": [\"a\", \"b:\", \"c\"],\n"
      " \"tp\": 1,\n"
      "\n"
      " \"tp\"  :  2}");
  EXPECT_EQ(m,
            "config file 'x.json': the key \"tp\" appears twice in one object (lines 5 and 7); "
            "give each key once");
  // An escaped quote in the duplicated key itself.
  const std::string e = error_of("{\"a\\\"b\": 1,\n\"a\\\"b\": 2}");
  EXPECT_NE(e.find("the key \"a\"b\" appears twice in one object (lines 1 and 2)"),
            std::string::npos)
      << e;
}

TEST(JsonRead, DuplicateBeforeTheSeparatorStillNamed) {
  // The parser reports the key before it reads the ':' after it: a text that breaks there still
  // says which key, with the line of its first occurrence.
  const std::string m = error_of("{\"a\": 1,\n\"a\"");
  EXPECT_NE(m.find("the key \"a\" appears twice in one object (first on line 1)"),
            std::string::npos)
      << m;
}
