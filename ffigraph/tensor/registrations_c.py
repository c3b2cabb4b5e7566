"""C code of the generic ops (DeepCopyOp, ViewOp, Shape, Shape_i) for TensorType, via their registries."""
from ffigraph.tensor.generic_ops import (
    register_deep_copy_op_c_code,
    register_shape_c_code,
    register_shape_i_c_code,
    register_view_op_c_code,
)
from ffigraph.tensor.type import TensorType

register_deep_copy_op_c_code(TensorType, """
/* a fresh C-contiguous copy */
if (ffg_copy_array(&%(oname)s, &%(iname)s, %(ndim)s, sizeof(%(ctype)s), %(allocator)s, %(err)s))
    %(fail)s
""", version=(1,))

register_view_op_c_code(TensorType, """
/* the same memory, not owned */
%(oname)s = %(iname)s;
%(oname)s.owned = NULL;
""", version=(1,))

register_shape_c_code(TensorType, """
{
    int64_t len = %(ndim)s, d;
    if (ffg_alloc_array(&%(oname)s, 1, &len, sizeof(int64_t), %(allocator)s, %(err)s))
        %(fail)s
    for (d = 0; d < %(ndim)s; ++d)
        ((int64_t *)%(oname)s.data)[d] = %(iname)s.shape[d];
}
""", version=(1,))

register_shape_i_c_code(TensorType, """
if (ffg_alloc_array(&%(oname)s, 0, NULL, sizeof(int64_t), %(allocator)s, %(err)s))
    %(fail)s
*(int64_t *)%(oname)s.data = %(iname)s.shape[%(i)s];
""", """
if (%(i)s >= %(ndim)s) {
    ffg_set_error(%(err)s, FFG_ERR_VALUE, -1, "Shape_i(%(i)s): the value has only %(ndim)s dimensions");
    %(fail)s
}
""", version=(1,))
