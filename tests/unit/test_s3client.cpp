// The S3 client's pure pieces: URLs, credentials files, part counts, XML answers, key encoding;
// and the s3 backend's config checks. Requests against a real gateway: tests/cli/test_s3_*.sh.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "ckptbench/base/error.hpp"
#include "ckptbench/io/backend.hpp"
#include "support.hpp"

#ifdef CKPT_HAVE_S3
#include "ckptbench/io/s3client.hpp"

using namespace ckpt;

TEST(S3Url, BucketAndPrefix) {
  auto u = s3::parse_url("s3://ckpt-bench/runs/a/");
  EXPECT_EQ(u.bucket, "ckpt-bench");
  EXPECT_EQ(u.prefix, "runs/a");
  u = s3::parse_url("s3://abc");
  EXPECT_EQ(u.bucket, "abc");
  EXPECT_EQ(u.prefix, "");
}

TEST(S3Url, RefusesWhatS3Refuses) {
  for (const char* bad :
       {"http://x/y", "s3://", "s3://ab", "s3://Upper", "s3://a_b/c", "s3://bucket//x", "/tmp/x"}) {
    try {
      s3::parse_url(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("'s3.url'"), std::string::npos) << e.what();
    }
  }
}

TEST(S3Credentials, ProfileOfAnIniFile) {
  const std::string ini =
      "[default]\naws_access_key_id = AKDEF\naws_secret_access_key = sdef\n\n"
      "# comment\n[ckpt]\naws_access_key_id=AKCK\n  aws_secret_access_key =  sck  \n"
      "aws_session_token = tok\n[half]\naws_access_key_id = only\n";
  auto c = s3::credentials_from_ini(ini, "ckpt");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->access_key, "AKCK");
  EXPECT_EQ(c->secret_key, "sck");
  EXPECT_EQ(c->session_token, "tok");
  c = s3::credentials_from_ini(ini, "default");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->access_key, "AKDEF");
  EXPECT_FALSE(s3::credentials_from_ini(ini, "half"));     // no secret
  EXPECT_FALSE(s3::credentials_from_ini(ini, "missing"));  // no such profile
}

TEST(S3Credentials, MissingSaysWhereItLookedNeverAValue) {
  const char* saved[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                         "AWS_SHARED_CREDENTIALS_FILE", "AWS_PROFILE"};
  std::vector<std::pair<std::string, std::string>> old;
  for (const char* k : saved) {
    if (const char* v = std::getenv(k)) old.emplace_back(k, v);
    ::unsetenv(k);
  }
  const std::string file = ::testing::TempDir() + "/ckpt-creds-test";
  {
    std::ofstream out(file);
    out << "[other]\naws_access_key_id = AKX\naws_secret_access_key = TOPSECRET\n";
  }
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", file.c_str(), 1);
  try {
    s3::load_credentials("ckpt");
    ADD_FAILURE() << "no profile ckpt, but credentials loaded";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("profile 'ckpt'"), std::string::npos) << m;
    EXPECT_NE(m.find(file), std::string::npos) << m;
    EXPECT_EQ(m.find("TOPSECRET"), std::string::npos) << m;
  }
  auto c = s3::load_credentials("other");
  EXPECT_EQ(c.access_key, "AKX");
  EXPECT_EQ(c.source.find("TOPSECRET"), std::string::npos);
  ::setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "senv", 1);
  EXPECT_EQ(s3::load_credentials("").access_key, "AKENV");     // the environment first
  EXPECT_EQ(s3::load_credentials("other").access_key, "AKX");  // a named profile: the file
  for (const char* k : saved) ::unsetenv(k);
  for (const auto& [k, v] : old) ::setenv(k.c_str(), v.c_str(), 1);
  std::remove(file.c_str());
}

TEST(S3Parts, NoPartButTheLastBelowFiveMiB) {
  const uint64_t M = 1 << 20, part = 8 * M;
  EXPECT_EQ(s3::part_count(0, part), 1u);
  EXPECT_EQ(s3::part_count(3 * M, part), 1u);
  EXPECT_EQ(s3::part_count(8 * M, part), 1u);
  EXPECT_EQ(s3::part_count(16 * M, part), 2u);
  EXPECT_EQ(s3::part_count(17 * M, part), 2u);  // 8 + 9: the 1 MiB tail joins the last part
  EXPECT_EQ(s3::part_count(21 * M, part), 3u);  // 8 + 8 + 5
  for (uint64_t len = part; len < 40 * M; len += 123457) {
    const uint64_t n = s3::part_count(len, part);
    const uint64_t last = len - (n - 1) * part;
    EXPECT_GE(last, n > 1 ? s3::kMinPart : 1) << len;
    EXPECT_LT(last, part + s3::kMinPart) << len;
  }
}

// The parts of an object several ranks write: each writer's range reaches to the next one's
// start, parts are numbered in offset order, and what S3 refuses is said (not thrown).
TEST(S3Parts, ObjectOfSeveralWriters) {
  const uint64_t M = 1 << 20, part = 8 * M;
  // Writers 3 and 1 (given out of order), 20 MiB each, the second starting at 24 MiB (a 4 MiB
  // alignment hole that goes with the first writer's range), object 48 MiB.
  s3::ObjectParts o = s3::object_parts({{24 * M, 44 * M, 1}, {0, 20 * M, 3}}, 48 * M, part, 2);
  ASSERT_TRUE(o.error.empty()) << o.error;
  ASSERT_EQ(o.ranges.size(), 2u);
  EXPECT_EQ(o.ranges[0].writer, 3);
  EXPECT_EQ(o.ranges[0].end, 24 * M);     // to the next writer's start
  EXPECT_EQ(o.ranges[0].nparts, 3u);      // 8 + 8 + 8
  EXPECT_EQ(o.ranges[1].first_part, 3u);  // its parts are 4..
  EXPECT_EQ(o.ranges[1].end, 48 * M);     // to the object's end
  EXPECT_EQ(o.ranges[1].nparts, 3u);      // 8 + 8 + 8
  EXPECT_EQ(o.parts, 6u);
  EXPECT_FALSE(o.single_put);  // two writers: always a multipart upload
  // One writer, one part: a plain PUT; runs of one writer with holes between are one range.
  o = s3::object_parts({{0, 1 * M, 0}, {2 * M, 3 * M, 0}}, 4 * M, part, 1);
  EXPECT_TRUE(o.single_put);
  EXPECT_EQ(o.ranges.size(), 1u);
  // A writer's range below 5 MiB that is not the object's last: S3 would refuse the upload.
  o = s3::object_parts({{0, 4 * M, 0}, {4 * M, 40 * M, 1}}, 40 * M, part, 2);
  EXPECT_NE(o.error.find("writer 0's bytes 0-4194304"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("5 MiB"), std::string::npos) << o.error;
  // More than 10,000 parts.
  o = s3::object_parts({{0, 10001 * s3::kMinPart, 0}}, 10001 * s3::kMinPart, s3::kMinPart, 1);
  EXPECT_NE(o.error.find("10,000"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("'block_size'"), std::string::npos) << o.error;
  // Overlapping writers are a bug of the plan, said as such.
  o = s3::object_parts({{0, 10 * M, 0}, {8 * M, 20 * M, 1}}, 20 * M, part, 2);
  EXPECT_NE(o.error.find("overlapping"), std::string::npos) << o.error;
}

TEST(S3Xml, ValuesAndEntities) {
  const std::string x =
      "<?xml version=\"1.0\"?><ListMultipartUploadsResult><Upload><Key>a/b&amp;c</Key>"
      "<UploadId>2~xyz</UploadId></Upload><Upload><Key>d</Key><UploadId>2~q</UploadId>"
      "</Upload><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>";
  auto keys = s3::xml_values(x, "Key");
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0], "a/b&c");
  EXPECT_EQ(s3::xml_values(x, "Upload").size(), 2u);
  EXPECT_EQ(s3::xml_values(x, "IsTruncated")[0], "false");
  EXPECT_TRUE(s3::xml_values(x, "Nothing").empty());
  const std::string body = s3::complete_body({"\"e1\"", "\"e2\""});
  EXPECT_NE(body.find("<Part><PartNumber>2</PartNumber><ETag>\"e2\"</ETag></Part>"),
            std::string::npos);
}

TEST(S3Encode, KeysAndQueryValues) {
  EXPECT_EQ(s3::encode("point-001/rep-01/rank 3+x.bin", true), "point-001/rep-01/rank%203%2Bx.bin");
  EXPECT_EQ(s3::encode("a/b=c", false), "a%2Fb%3Dc");
}

TEST(S3Backend, ValidateNamesTheKeyAndTheLimit) {
  const auto& be = find_backend("s3");
  auto pc = [] {
    PointConfig p;
    p.backend = "s3";
    p.block_size = 8 << 20;
    p.backend_options = {{"url", "s3://bucket/x"}, {"endpoint", "http://127.0.0.1:7480"}};
    return p;
  };
  PointConfig ok = pc();
  EXPECT_NO_THROW(be.validate(ok));
  auto refused = [&](PointConfig p, const std::string& want) {
    try {
      be.validate(p);
      ADD_FAILURE() << "accepted; wanted an error naming " << want;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  PointConfig p = pc();
  p.block_size = 1 << 20;
  refused(p, "'block_size'");
  p = pc();
  p.block_size = uint64_t{6} << 30;
  refused(p, "5 GiB");
  p = pc();
  p.backend_options.erase("url");
  refused(p, "'s3.url' is required");
  p = pc();
  p.backend_options["endpoint"] = "127.0.0.1:7480";
  refused(p, "'s3.endpoint'");
  p = pc();
  p.backend_options["secret"] = "x";
  refused(p, "secret");
  p = pc();
  p.direct = true;
  refused(p, "'direct'");
  p = pc();
  p.queue_depth = 0;
  refused(p, "'queue_depth'");
}
#endif
