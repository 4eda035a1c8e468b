    Option<"taskBytes", "task-bytes", "int64_t", "65536",
           "What a task may keep in a core's cache">,
    Option<"forwardName", "forward", "std::string", "\"forward\"", "">,
