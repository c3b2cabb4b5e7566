def inplace_rewrite(fgraph):
    return fgraph
