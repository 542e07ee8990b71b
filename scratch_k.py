import numpy as np, time
from nmfsc._kernels import masked_rows as mr
from nmfsc._kernels import projection as pj
N,T,M=361,2429,49
rng=np.random.default_rng(0)
mask=rng.random((N,T))<0.7
W=rng.random((N,M)); H=rng.random((M,T))
V=rng.random((N,T))
E=np.where(mask,V-W@H,0.0)
Wt=np.ascontiguousarray(W.T)
for name,(X,Y,D,tr) in {"H":(H.copy(),Wt,(Wt*Wt)@mask.astype(float),False),"W":(Wt.copy(),H,(H*H)@mask.T.astype(float),True)}.items():
  for rule in (0,2):
    n=X.shape[1]; b=np.empty(n); s=np.empty((4,n))
    mr.sweep_masked_rows(X.copy(),Y,E.copy(),mask,D,rule,0.5*np.sqrt(n),pj.max_filter_passes(n),tr,5,0.1,b,s)
    best=1e9
    for _ in range(3):
        X2=X.copy();E2=E.copy(); t=time.perf_counter()
        mr.sweep_masked_rows(X2,Y,E2,mask,D,rule,0.5*np.sqrt(n),pj.max_filter_passes(n),tr,5,0.1,b,s)
        best=min(best,time.perf_counter()-t)
    print(name, rule, best*1e3, "ms/sweep")
t=time.perf_counter(); W@H; print("WH", (time.perf_counter()-t)*1e3)
