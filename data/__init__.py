"""The project's own small data, installed with the package as `knowref60k_data` (name lists, bot list,
tokenizer words, the validity model and its calibration, gold sets and control items). Each folder's
README.md says where its files come from and how to rebuild them; the code reaches them through
`knowref60k.core.paths`."""
