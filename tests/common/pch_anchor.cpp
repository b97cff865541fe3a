// The source of headscope_test_pch, the target that owns the test suites' precompiled header
// (tests/CMakeLists.txt); it defines nothing.
