"""The primitive library: one family of primitives per module.

Every primitive is made by one ``rules.define_primitive`` call that registers all its rules,
written in this order: its rules (plain functions), the call, then the public function that
binds it. Members of a family share rules as ordinary functions; a shared rule that must know
its primitive is passed as ``rules.per_primitive(builder)``, and the rules common to a family
come from a helper whose dict is spread into the call:

    add_p = rules.define_primitive(
        "add",
        **elementwise_rules(np.add, "stablehlo.add", _ANY),  # reference, lowering, checks, batching
        jvp=_add_jvp,
        transpose=_add_transpose,
    )
"""
