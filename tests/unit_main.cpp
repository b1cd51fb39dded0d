// gtest main for unit tests that may call MPI helpers: MPI is initialised as a singleton.
#include <gtest/gtest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Test discovery (--gtest_list_tests) must not need MPI.
  bool listing = ::testing::GTEST_FLAG(list_tests);
  if (!listing) MPI_Init(&argc, &argv);
  int rc = RUN_ALL_TESTS();
  if (!listing) MPI_Finalize();
  return rc;
}
