import numpy as np, nmfsc, warnings, time, sys
from nmfsc.solvers import masked_accelerated as ma
warnings.simplefilter("ignore")
calls=[]
orig=ma.masked_sweep
def timed(X,Y,E,mask,D,rule,l1,tr,sweeps,delta,inner,idelta):
    t=time.perf_counter(); out=orig(X,Y,E,mask,D,rule,l1,tr,sweeps,delta,inner,idelta); calls.append((tr,rule,sweeps,time.perf_counter()-t)); return out
ma.masked_sweep=timed
name=sys.argv[1]
N,T,M,p={"CBCL":(361,2429,49,{"sparseness_w":0.8}),"natural":(288,10000,72,{"sparseness_h":0.85})}[name]
rng=np.random.default_rng(0); V=np.abs(rng.standard_normal((N,T))); mask=rng.random((N,T))<0.7
kw=dict(random_state=0,tol=0.0,solver="accelerated",**p)
nmfsc.nmf_sc(V,M,max_iter=1,mask=mask,**kw); calls.clear()
b=nmfsc.nmf_sc(V,M,max_iter=3,mask=mask,**kw)
print(name, b.times[-1]/3)
for c in calls: print(c)
