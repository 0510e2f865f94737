# Read by CMake right after llama.cpp's own project() call, when scripts/setup builds llama-cpp-python
# (CMAKE_PROJECT_llama.cpp_INCLUDE). llama-cpp-python 0.3.36 forces LLAMA_BUILD_COMMON on, but its Python package
# loads only libllama and libggml*: the common library (argument parsing, chat parsers, downloads with cpp-httplib)
# is 53 of the 127 compiled files, built and then thrown away: without it scripts/setup used 3 min 34 s of CPU
# (user time) instead of 7 min 10 s, and took 2 min 26 s from an empty pip cache on 2 busy cores. Turning it off
# here, after llama-cpp-python's forced setting and before llama.cpp's option(), is the one place it sticks.
# Tests, examples, tools and the server are already off when llama.cpp is built as a subproject; LLAVA_BUILD=OFF
# (in scripts/setup) drops the multimodal library.
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama: build common utils library" FORCE)
