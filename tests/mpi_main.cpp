// gtest main for MPI integration tests: every rank runs every test; only rank 0 prints; the
// exit code is non-zero if any rank failed a test, and 77 (ctest: skipped) when every test that
// ran was skipped on every rank (e.g. the backend the file tests is not built).
#include <gtest/gtest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  // As the tool does: a checkpoint's compute phase runs on a thread that makes no MPI call.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int rc = RUN_ALL_TESTS();
  int any = 0;
  MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any != 0 && rc == 0) fprintf(stderr, "a test failed on another rank\n");
  const auto* u = ::testing::UnitTest::GetInstance();
  int skipped = u->test_to_run_count() > 0 && u->skipped_test_count() == u->test_to_run_count();
  int all_skipped = 0;
  MPI_Allreduce(&skipped, &all_skipped, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Finalize();
  if (any != 0) return 1;
  return all_skipped ? 77 : 0;
}
