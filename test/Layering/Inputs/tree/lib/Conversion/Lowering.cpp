// constexpr int64_t kCommentedBytes = 1; is a comment.
constexpr int64_t kAttentionTileBytes = 4 << 20;
constexpr llvm::StringLiteral kArenaBytesAttrName = "tgc.arena_bytes";
