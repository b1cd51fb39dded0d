# Script mode (cmake -P), run at every build by the ckpt_version target: writes the version
# header with `git describe` of the source tree now, so a binary built after a commit names that
# commit (reports record it). configure_file rewrites the header only when the text changes, so
# nothing is recompiled otherwise. Inputs: CKPT_SRC, CKPT_IN, CKPT_OUT, PROJECT_VERSION,
# URING_VERSION.
execute_process(COMMAND git describe --always --dirty --tags
                WORKING_DIRECTORY ${CKPT_SRC}
                OUTPUT_VARIABLE CKPT_GIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT CKPT_GIT)
  set(CKPT_GIT "unknown")
endif()
configure_file(${CKPT_IN} ${CKPT_OUT} @ONLY)
